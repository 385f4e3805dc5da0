-- The older interface: lighty.env, lighty.request, lighty.header,
-- lighty.content, a status returned.
if lighty.env["uri.path"] == "/legacy" then
  lighty.header["Content-Type"] = "text/plain"
  lighty.header["X-Method"] = lighty.env["request.method"]
  lighty.content = { "agent=", lighty.request["User-Agent"] or "-", "\n",
    { filename = "@DIR@/root/a.txt" } }
  return 200
end
if lighty.env["uri.path"] == "/helpers" then
  local c = lighty.c
  local out = {
    c.b64enc("hello?"), c.b64urlenc("\255\254"), c.b64dec("aGVsbG8/"),
    c.hexenc("ab"), c.hexdec("6162"), c.md("sha1", "abc"), c.md("md5", ""),
    c.hmac("sha256", "key", "The quick brown fox jumps over the lazy dog"),
    tostring(c.digest_eq("ABCD", "abcd")), tostring(c.secret_eq("x", "y")),
    c.xmlenc("<a href='x'>&\"</a>"), c.urlenc("/a b/ü?x"), c.urldec("/a%20b%2Fc"),
    c.quotedenc('say "hi"'), c.quoteddec('"a\\"b"'),
    c.fspath_simplify("/a/./b/../c//d"),
  }
  local q = c.urldec_query("a=1&b=x+y&c")
  out[#out + 1] = q.a .. "|" .. q.b .. "|" .. q.c
  -- Bad and odd escapes, a plus encoded and not, control characters.
  out[#out + 1] = c.urldec("%zz%4%2B%01+x%7f%")
  local odd = c.urldec_query("k=%2B+a%zz&%41=b%0a")
  out[#out + 1] = odd.k .. "|" .. odd.A
  out[#out + 1] = c.urlenc_query({ ["a b=c"] = "x=y z%+!~/?:@,é" })
  local ck = c.cookie_tokens("x=1; y=\"two\"; z")
  out[#out + 1] = ck.x .. "|" .. ck.y .. "|" .. ck.z
  local ht = c.header_tokens("a, b;q=0.5")
  out[#out + 1] = table.concat(ht, " ")
  local names = {}
  for n in c.readdir("@DIR@/root/new") do names[#names + 1] = n end
  table.sort(names)
  out[#out + 1] = table.concat(names, ",")
  local st = c.stat("@DIR@/root/a.txt")
  out[#out + 1] = tostring(st.is_file) .. " " .. tostring(st.is_dir) .. " " .. st.st_size
  lighty.r.resp_body.set(table.concat(out, "\n") .. "\n")
  lighty.r.resp_header["Content-Type"] = "text/plain"
  return 200
end
