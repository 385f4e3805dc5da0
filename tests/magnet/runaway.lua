-- attract-raw-url-to: /spin never ends; /hog allocates without end.
local path = lighty.r.req_attr["uri.path"]
if path == "/spin" then
  local n = 0
  while true do
    n = n + 1
  end
elseif path == "/hog" then
  local t, s = {}, "x"
  while true do
    s = s .. s
    t[#t + 1] = s
  end
end
