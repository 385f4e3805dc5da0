-- A maintenance page (attract-raw-url-to): while the flag file exists every
-- request gets 503 with the page and a Retry-After.
local dir = "@DIR@"
if lighty.c.stat(dir .. "/maintenance.flag") then
  lighty.r.resp_header["Retry-After"] = "120"
  lighty.r.resp_header["Content-Type"] = "text/html"
  lighty.r.resp_body.set({ { filename = dir .. "/maintenance.html" } })
  return 503
end
