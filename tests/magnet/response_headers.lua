-- attract-response-start-to: response header edits.
local rh = lighty.r.resp_header
rh["X-Frame-Options"] = "DENY"
rh["Cache-Control"] = "max-age=60"
rh["ETag"] = ""
rh["X-Seen-Who"] = lighty.r.req_header["X-Who"] or "none"
rh["X-Seen-Drop"] = lighty.r.req_header["X-Drop"] or "none"
rh["X-Type"] = rh["Content-Type"]
