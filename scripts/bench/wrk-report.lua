-- wrk script for scripts/bench.sh: counts non-2xx responses in every thread and,
-- when the run is done, prints one line that scripts/bench/report.py parses:
--   WRK_RESULT requests=N duration_us=N non2xx=N connect=N read=N write=N timeout=N
--              status=N p50_us=N p95_us=N p99_us=N mean_us=N max_us=N
-- (wrk's own `status` error count covers only codes above 399; non2xx covers all.)

--
-- Optional, for routes whose request must vary (so no cache or single row makes
-- them look faster than they are):
--   WRK_PATHS_FILE  one request path per line, sent in turn (each thread starts
--                   at a different line)
--   WRK_BODIES_FILE one JSON body per line, POSTed in turn to the URL's path
--   WRK_OFFSET      lines to skip at the start (bench.sh: the measured run starts past
--                   the lines of its warm-up, with WRK_MEASURE_OFFSET)
--   WRK_SIGNALS     N: POST {"signals": [...]} bodies of N producer signals made here, each
--                   WRK_SIGNAL_JSON (one signal with one %s, its dedup_key) with a key no
--                   request of any run has used (run tag, thread, request, item); takes
--                   precedence over the two files
-- Without them wrk sends its one fixed request.

local threads = {}
local counter = 0

local function lines_of(path)
   local list = {}
   for line in io.lines(path) do
      if line ~= "" then
         table.insert(list, line)
      end
   end
   assert(#list > 0, path .. " has no lines")
   return list
end

local paths_file = os.getenv("WRK_PATHS_FILE")
local bodies_file = os.getenv("WRK_BODIES_FILE")
local signals = tonumber(os.getenv("WRK_SIGNALS") or "") or 0
if signals > 0 then
   local signal_json = assert(os.getenv("WRK_SIGNAL_JSON"), "WRK_SIGNALS needs WRK_SIGNAL_JSON")
   local items = {}
   function request()
      counter = counter + 1
      for i = 1, signals do
         items[i] = string.format(signal_json,
            string.format("wrk-%s-%d-%d", tag, counter, i))
      end
      return wrk.format("POST", nil, nil, '{"signals":[' .. table.concat(items, ",") .. "]}")
   end
elseif paths_file and paths_file ~= "" then
   local paths = lines_of(paths_file)
   function request()
      counter = counter + 1
      return wrk.format(nil, paths[(counter + offset) % #paths + 1])
   end
elseif bodies_file and bodies_file ~= "" then
   local bodies = lines_of(bodies_file)
   function request()
      counter = counter + 1
      return wrk.format("POST", nil, nil, bodies[(counter + offset) % #bodies + 1])
   end
end

-- WRK_OFFSET (optional): lines to skip first, e.g. past those a warm-up run sent.
local base_offset = tonumber(os.getenv("WRK_OFFSET") or "") or 0

-- A tag of this run, so that no two runs (a warm-up and its measured run) make the same keys.
math.randomseed(os.time())
local run_tag = string.format("%d%06d", os.time(), math.random(0, 999999))

function setup(thread)
   thread:set("offset", base_offset + #threads * 7919)
   thread:set("tag", run_tag .. "-" .. #threads)
   table.insert(threads, thread)
end

function init(args)
   non2xx = 0
   offset = offset or 0
   tag = tag or "0"
end

function response(status, headers, body)
   if status < 200 or status > 299 then
      non2xx = non2xx + 1
   end
end

function done(summary, latency, requests)
   local n = 0
   for _, t in ipairs(threads) do
      n = n + (t:get("non2xx") or 0)
   end
   local e = summary.errors
   io.write(string.format(
      "WRK_RESULT requests=%d duration_us=%d non2xx=%d connect=%d read=%d write=%d timeout=%d status=%d"
         .. " p50_us=%d p95_us=%d p99_us=%d mean_us=%d max_us=%d\n",
      summary.requests, summary.duration, n, e.connect, e.read, e.write, e.timeout, e.status,
      latency:percentile(50), latency:percentile(95), latency:percentile(99),
      math.floor(latency.mean + 0.5), latency.max))
end
