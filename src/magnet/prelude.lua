-- glint's mod_magnet: the `lighty` table a script sees, built once per
-- Lua state on the primitives P (Rust functions reading and changing the
-- request being run) and the helpers C (lighty.c). Returns the function
-- that finishes a run that touched `lighty.header`/`content` or left
-- globals, the one that clears what a run left behind, and the table a
-- script's globals fall back to. (A run is the script's own function,
-- resumed in its coroutine; mod_magnet calls these after it only when
-- P.touch was called or the script's globals are not empty.)
local P, C = ...
local setmetatable, rawget, rawset, next, type, error, pairs, coroutine, _G =
  setmetatable, rawget, rawset, next, type, error, pairs, coroutine, _G
local tointeger = math.tointeger

local function readonly() error("table is read-only", 2) end

-- `direct`: get takes the key as its last argument (the table before it
-- is ignored), and is the __index itself: one call fewer per read.
local function proxy(get, set, all, direct)
  return setmetatable({}, {
    __index = direct and get or function(_, k) return get(k) end,
    __newindex = function(_, k, v) set(k, v) end,
    __pairs = function() return next, all(), nil end,
    __metatable = false,
  })
end

local resp_body = setmetatable({}, {
  __index = function(_, k)
    if k == "set" then return P.rb_set
    elseif k == "add" then return P.rb_add
    elseif k == "get" then return P.rb_get()
    elseif k == "len" then return P.rb_len()
    elseif k == "bytes_in" or k == "bytes_out" then return 0
    end
    error("r.resp_body invalid method or param", 2)
  end,
  __newindex = readonly,
  __metatable = false,
})

local req_body = setmetatable({}, {
  __index = function(_, k)
    if k == "bytes_in" or k == "bytes_out" or k == "len" then return 0 end
    if k == "get" then return nil end
    error("r.req_body: not provided by glint", 2)
  end,
  __newindex = readonly,
  __metatable = false,
})

local r = setmetatable({
  req_header = proxy(P.rh_get, P.rh_set, P.rh_pairs, true),
  req_attr = proxy(P.ra_get, P.ra_set, P.ra_pairs, true),
  req_item = proxy(P.ri_get, P.ri_set, function() return {} end),
  req_env = proxy(P.re_get, P.re_set, P.re_pairs),
  resp_header = proxy(P.sh_get, P.sh_set, P.sh_pairs),
  resp_body = resp_body,
  req_body = req_body,
}, { __newindex = readonly, __metatable = false })

local stats = {}
local plugin_stats = setmetatable({}, {
  __index = function(_, k) return stats[k] or 0 end,
  __newindex = function(_, k, v) stats[k] = tointeger(v) or 0 end,
  __pairs = function() return next, stats, nil end,
  __metatable = false,
})

local server = setmetatable({
  stats = plugin_stats,
  plugin_stats = plugin_stats,
  irequests = function() return function() return nil end end,
}, { __newindex = readonly, __metatable = false })

setmetatable(C, { __newindex = readonly, __metatable = false })

-- lighty.header and lighty.content (the older interface) live in a
-- scratch table, emptied after a run that touched it.
local result = {}
local touch = P.touch
local lighty = setmetatable({
  r = r, c = C, server = server,
  request = r.req_header, env = r.req_attr, req_env = r.req_env,
  status = plugin_stats,
  RESTART_REQUEST = 99,
  stat = C.stat,
}, {
  __index = function(_, k)
    local v = rawget(result, k)
    if v == nil and (k == "header" or k == "content") then
      v = {}
      rawset(result, k, v)
      touch()
    end
    return v
  end,
  __newindex = function(_, k, v) rawset(result, k, v); touch() end,
  __metatable = false,
})

print = P.print

-- The coroutines a script makes get a hook of their own (the bound on a
-- run's time reaches them so); wrap is create and resume, as Lua's.
local co_create, co_resume, co_close = coroutine.create, coroutine.resume, coroutine.close
local guard = P.guard
coroutine.create = function(f)
  local co = co_create(f)
  guard(co)
  return co
end
local function wrapped(co, ok, ...)
  if ok then return ... end
  local err = ...
  co_close(co)
  if type(err) == "string" then error(err, 2) end
  error(err, 0)
end
coroutine.wrap = function(f)
  local co = coroutine.create(f)
  return function(...) return wrapped(co, co_resume(co, ...)) end
end

-- What a script's globals fall back to: `lighty`, then the standard
-- library (the script's own globals are in its environment, emptied after
-- each run).
local base = setmetatable({ lighty = lighty }, { __index = _G, __metatable = false })

local function clear(env)
  for k in next, env do rawset(env, k, nil) end
  for k in next, result do rawset(result, k, nil) end
end

-- After a run that returned `n` (an integer): the older interface's
-- header and content it set, then its globals cleared.
local function after(n, env)
  local h = rawget(result, "header")
  if type(h) == "table" then
    for k, v in pairs(h) do
      if (type(k) == "string") and (type(v) == "string" or type(v) == "number") then
        P.sh_set(k, v)
      end
    end
  end
  local content = rawget(result, "content")
  if n >= 200 and type(content) == "table" then
    P.rb_content(content)
  end
  clear(env)
end

return after, clear, base
