-- attract-physical-path-to: the file's attributes read after the script
-- changed the URL path and then the file.
local a = lighty.r.req_attr
local function show(v) if v == nil then return "nil" end return tostring(v) end
if a["uri.path"] ~= "/lazy.txt" then return end
local out = {}
local function see(k, v) out[#out + 1] = k .. "=" .. show(v) end
local root = a["physical.doc-root"]
see("physical", a["physical.path"] == root .. "/lazy.txt")
a["uri.path"] = "/other.txt"
see("path", a["uri.path"])
see("uri", a["request.uri"])
see("physical2", a["physical.path"] == root .. "/lazy.txt")
see("rel", a["physical.rel-path"])
a["physical.path"] = root .. "/a.txt"
see("physical3", a["physical.path"] == root .. "/a.txt")
see("rel3", a["physical.rel-path"])
see("query", a["uri.query"])
lighty.r.resp_body.set({ table.concat(out, "\n") .. "\n" })
lighty.r.resp_header["Content-Type"] = "text/plain"
return 200
