-- attract-raw-url-to: request header edits the later stages see.
lighty.r.req_header["X-Who"] = "magnet"
lighty.r.req_header["X-Drop"] = nil
lighty.r.req_env["MAGNET_SEEN"] = "yes"
