-- mod_secdownload's replacement (attract-raw-url-to): /dl/<mac>/<hex time><path>
-- where <mac> is base64url(HMAC-SHA256(secret, path .. hex time)), valid for
-- 60 seconds. The file is served from /protected<path>, which is refused
-- to anyone who asks for it directly.
local secret = "correct horse battery staple"
local timeout = 60
local path = lighty.r.req_attr["uri.path"]
if path:sub(1, 11) == "/protected/" then
  return 403
end
local mac, ts, rel = path:match("^/dl/([%w_%-]+)/(%x+)(/.+)$")
if not mac then
  return 0
end
local want = lighty.c.b64urlenc(lighty.c.hexdec(lighty.c.hmac("sha256", secret, rel .. ts)))
if not lighty.c.secret_eq(want, mac) then
  return 403
end
local age = lighty.c.time() - tonumber(ts, 16)
if age > timeout or age < -timeout then
  return 410
end
lighty.r.req_attr["uri.path"] = "/protected" .. rel
lighty.r.req_attr["physical.rel-path"] = "/protected" .. rel
