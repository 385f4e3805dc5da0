-- mod_evasive's replacement (attract-raw-url-to): at most 3 requests per
-- client address in a minute; the count lives in the script's own state.
local limit, window = 3, 60
local ip = lighty.r.req_attr["request.remote-addr"]
local now = lighty.c.time()
local seen = _G.evasive_seen or {}
_G.evasive_seen = seen
local e = seen[ip]
if not e or now - e.since >= window then
  e = { since = now, n = 0 }
  seen[ip] = e
end
e.n = e.n + 1
if e.n > limit then
  lighty.r.resp_header["Retry-After"] = tostring(window)
  lighty.r.resp_header["Content-Type"] = "text/plain"
  lighty.r.resp_body.set({ "too many requests from ", ip, "\n" })
  return 429
end
