-- mod_usertrack's replacement (attract-response-start-to): a client
-- without the cookie gets one, an id made of its address and the time.
local cookies = lighty.c.cookie_tokens(lighty.r.req_header["Cookie"])
if cookies["TRACKID"] == nil then
  local s, ns = lighty.c.hrtime()
  local id = lighty.c.md("md5", lighty.r.req_attr["request.remote-addr"] .. s .. ns)
  lighty.r.resp_header["Set-Cookie"] = "TRACKID=" .. id:lower() .. "; Path=/; Max-Age=3600"
end
