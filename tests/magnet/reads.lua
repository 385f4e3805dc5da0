-- attract-raw-url-to: the reads every script makes, answered in a body
-- (a header given twice, names in any case, keys that are no name).
local h, a = lighty.r.req_header, lighty.r.req_attr
local function show(v) if v == nil then return "nil" end return tostring(v) end
local out = {
  "twice=" .. show(h["X-Twice"]),
  "case=" .. show(h["x-oNCE"]),
  "missing=" .. show(h["X-Missing"]),
  "numkey=" .. show(h[1]),
  "host=" .. show(lighty.request["Host"]),
  "path=" .. show(a["uri.path"]),
  "query=" .. show(a["uri.query"]),
  "method=" .. show(a["request.method"]),
  "env=" .. show(lighty.env["uri.path"]),
  "unknown=" .. show(a["no.such"]),
  "attrnum=" .. show(a[7]),
}
lighty.r.resp_body.set({ table.concat(out, "\n") .. "\n" })
lighty.r.resp_header["Content-Type"] = "text/plain"
return 200
