-- attract-raw-url-to: a script error on /broken.
if lighty.r.req_attr["uri.path"] == "/broken" then
  local missing = nil
  return missing.field
end
