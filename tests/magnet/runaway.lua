-- attract-raw-url-to: /spin never ends; /hog allocates without end;
-- /co never ends inside a coroutine; /co-ok yields and ends.
local path = lighty.r.req_attr["uri.path"]
if path == "/spin" then
  local n = 0
  while true do
    n = n + 1
  end
elseif path == "/co" then
  local spin = coroutine.wrap(function()
    while true do end
  end)
  spin()
elseif path == "/co-ok" then
  local gen = coroutine.wrap(function() coroutine.yield(7) end)
  lighty.r.resp_header["X-Yielded"] = tostring(gen())
  return 200
elseif path == "/hog" then
  local t, s = {}, "x"
  while true do
    s = s .. s
    t[#t + 1] = s
  end
end
