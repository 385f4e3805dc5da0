-- A front controller, as lighttpd's wiki shows it: every path that is not
-- a file is answered by /index.html (attract-physical-path-to).
local st = lighty.c.stat(lighty.r.req_attr["physical.path"])
if not st or not st.is_file then
  lighty.r.req_attr["uri.path"] = "/index.html"
  lighty.r.req_attr["physical.rel-path"] = "/index.html"
  lighty.r.req_attr["physical.path"] = lighty.r.req_attr["physical.doc-root"] .. "/index.html"
end
