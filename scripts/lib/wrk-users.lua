-- wrk-users.lua — wrk requests of many users (scripts/bench-http.sh,
-- scripts/bench-join-ab.sh): BENCH_METHOD, BENCH_PATH and BENCH_BODY make
-- the request, BENCH_TOKENS is a file of JWTs (one per line, tools/mint-token),
-- BENCH_LIMIT the most of them to use (0: all), BENCH_THREADS wrk's -t.
-- Each thread walks its own stride of the token file: a distinct user per
-- request until the file (or BENCH_LIMIT) wraps. The requests are built in
-- init, so that the load generator spends as little CPU per request as it
-- can: it shares the machine with what it measures.
local method, path, body = os.getenv("BENCH_METHOD"), os.getenv("BENCH_PATH"), os.getenv("BENCH_BODY") or ""
local threads, limit = tonumber(os.getenv("BENCH_THREADS")), tonumber(os.getenv("BENCH_LIMIT") or "0")
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
end
function request()
  i = i + 1
  if i > n then i = 1 end
  return reqs[i]
end
