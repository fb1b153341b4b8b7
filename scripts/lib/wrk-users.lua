-- wrk-users.lua — wrk requests of many users (scripts/bench-http.sh,
-- scripts/bench-join-ab.sh): BENCH_METHOD, BENCH_PATH and BENCH_BODY make
-- the request, BENCH_TOKENS is a file of JWTs (one per line, tools/mint-token),
-- BENCH_LIMIT the most of them to use (0: all), BENCH_THREADS wrk's -t.
-- Each thread walks its own stride of the token file: a distinct user per
-- request until the file (or BENCH_LIMIT) wraps. The requests are built in
-- init, so that the load generator spends as little CPU per request as it
-- can: it shares the machine with what it measures.
-- wrk starts each thread as soon as its own init is done, and its clock
-- once every thread has started: the first thread would send requests
-- during the next one's init (a second or more for a million users),
-- counted in requests per second though outside the clock. With
-- BENCH_READY (a file that does not exist yet) every thread's init adds
-- a line to it and no thread sends before it has a line per thread; a
-- script may wait for them too, to measure the run alone.
local method, path, body = os.getenv("BENCH_METHOD"), os.getenv("BENCH_PATH"), os.getenv("BENCH_BODY") or ""
local threads, limit = tonumber(os.getenv("BENCH_THREADS")), tonumber(os.getenv("BENCH_LIMIT") or "0")
local ready = os.getenv("BENCH_READY")
local counter = 0
function setup(thread) thread:set("tid", counter); counter = counter + 1 end
function init(args)
  reqs = {}
  local k = 0
  for tok in io.lines(os.getenv("BENCH_TOKENS")) do
    if limit > 0 and k >= limit then break end
    -- this thread's stride only
    if k % threads == tid then
      local h = {["Authorization"] = "Bearer " .. tok}
      if body ~= "" then
        h["Content-Type"] = "application/json"
        reqs[#reqs + 1] = wrk.format(method, path, h, body)
      else
        reqs[#reqs + 1] = wrk.format(method, path, h)
      end
    end
    k = k + 1
  end
  n, i = #reqs, 0
  started, checked = not ready, tid ~= 0
  if ready then
    local f = assert(io.open(ready, "a"))
    f:write("ready\n")
    f:close()
  end
end
-- wrk calls the first thread's request() once in its init loop, to
-- check the request: that call must not wait for the others' inits
-- (checked: that call is past; both set by init, which runs after setup
-- has set tid)
local started, checked
local function all_ready()
  local f = io.open(ready, "r")
  if not f then return false end
  local k = 0
  for _ in f:lines() do k = k + 1 end
  f:close()
  return k >= threads
end
function request()
  if not started then
    if checked then
      while not all_ready() do os.execute("sleep 0.01") end
      started = true
    end
    checked = true
  end
  i = i + 1
  if i > n then i = 1 end
  return reqs[i]
end
