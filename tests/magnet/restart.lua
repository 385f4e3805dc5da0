-- attract-raw-url-to: /old/... moves to /new/... by a restart; /loop
-- restarts for ever (the server stops it).
local path = lighty.r.req_attr["uri.path"]
if path:sub(1, 5) == "/old/" then
  lighty.r.req_attr["request.uri"] = "/new/" .. path:sub(6)
  return lighty.RESTART_REQUEST
elseif path == "/loop" then
  return lighty.RESTART_REQUEST
end
