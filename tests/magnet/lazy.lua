-- attract-raw-url-to: reads after the script's own writes and after a
-- restart (where a context that reads the request only when asked could
-- give the old value or the new one at the wrong time). The first pass
-- writes, reads and restarts; the second answers with both passes' reads.
local a, h = lighty.r.req_attr, lighty.r.req_header
local function show(v) if v == nil then return "nil" end return tostring(v) end
local path = a["uri.path"]
if path ~= "/lazy" and path ~= "/lazy/again" then return end
if h["X-Pass"] == nil then
  local seen = {}
  local function see(k, v) seen[#seen + 1] = k .. "=" .. show(v) end
  a["uri.path"] = "/changed"
  see("path", a["uri.path"])
  see("uri", a["request.uri"])
  see("raw", a["uri.path-raw"])
  see("physical", a["physical.path"])
  a["request.uri"] = "/lazy/again?q=2"
  see("uri2", a["request.uri"])
  see("raw2", a["uri.path-raw"])
  see("query2", a["uri.query"])
  h["X-Lent"] = "set"
  see("lent", h["X-Lent"])
  see("client", h["X-Client"])
  h["X-Client"] = nil
  see("client2", h["X-Client"])
  h["X-Pass"] = "1"
  h["X-Seen"] = table.concat(seen, ";")
  return lighty.RESTART_REQUEST
end
local out = {}
for s in h["X-Seen"]:gmatch("[^;]+") do out[#out + 1] = "first " .. s end
local function see(k, v) out[#out + 1] = k .. "=" .. show(v) end
see("path", a["uri.path"])
see("uri", a["request.uri"])
see("orig", a["request.orig-uri"])
see("raw", a["uri.path-raw"])
see("query", a["uri.query"])
see("method", a["request.method"])
see("pass", h["X-Pass"])
see("lent", h["X-Lent"])
see("client", h["X-Client"])
see("host", h["Host"])
see("remote", a["request.remote-addr"])
see("server", a["request.server-addr"])
see("protocol", a["request.protocol"])
see("scheme", a["uri.scheme"])
see("authority", a["uri.authority"])
see("name", a["request.server-name"])
lighty.r.resp_body.set({ table.concat(out, "\n") .. "\n" })
lighty.r.resp_header["Content-Type"] = "text/plain"
return 200
