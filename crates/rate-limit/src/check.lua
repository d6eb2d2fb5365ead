-- Checks one request against every quota of a key and, only if all of them
-- have room, counts it in each. Runs atomically; uses the server clock.
--
-- KEYS[i]        storage key of quota i
-- ARGV[1]        member unique to this request (for sliding logs)
-- ARGV[3i-1]     window kind of quota i: 'f' (fixed) or 's' (sliding)
-- ARGV[3i]       window length of quota i, in microseconds
-- ARGV[3i+1]     limit of quota i; -1 means unlimited
--
-- Reply: { allowed (0/1), now (us), used_1, reset_1, used_2, reset_2, ... }
-- used_i counts this request if it was allowed; reset_i is the time (us) at
-- which quota i admits the next request (fixed: end of the window; sliding:
-- when the slot that admits the next request frees).
--
-- Fixed windows are hashes {w = window index, n = count} expiring after the
-- window; sliding windows are sorted sets scored by admission time.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n = #KEYS
local kind, win, limit, index, used, reset = {}, {}, {}, {}, {}, {}
local allowed = 1

for i = 1, n do
  local key = KEYS[i]
  kind[i] = ARGV[3 * i - 1]
  win[i] = tonumber(ARGV[3 * i])
  limit[i] = tonumber(ARGV[3 * i + 1])
  used[i] = 0
  if kind[i] == 'f' then
    index[i] = math.floor(now / win[i])
    reset[i] = (index[i] + 1) * win[i]
    if limit[i] >= 0 then
      local state = redis.call('HMGET', key, 'w', 'n')
      if tonumber(state[1]) == index[i] then
        used[i] = tonumber(state[2]) or 0
      end
    end
  else
    reset[i] = now + win[i]
    if limit[i] >= 0 then
      redis.call('ZREMRANGEBYSCORE', key, '-inf', now - win[i])
      used[i] = redis.call('ZCARD', key)
    end
  end
  if limit[i] >= 0 and used[i] >= limit[i] then
    allowed = 0
  end
end

local reply = { allowed, now }
for i = 1, n do
  local key = KEYS[i]
  if limit[i] >= 0 then
    if allowed == 1 then
      used[i] = used[i] + 1
      if kind[i] == 'f' then
        redis.call('HSET', key, 'w', index[i], 'n', used[i])
        redis.call('PEXPIREAT', key, math.ceil(reset[i] / 1000) + 1000)
      else
        redis.call('ZADD', key, now, ARGV[1])
        redis.call('PEXPIRE', key, math.ceil(win[i] / 1000) + 1000)
      end
    end
    if kind[i] == 's' then
      local rank = 0
      if used[i] >= limit[i] then
        rank = used[i] - limit[i]
      end
      local entry = redis.call('ZRANGE', key, rank, rank, 'WITHSCORES')
      if entry[2] then
        reset[i] = tonumber(entry[2]) + win[i]
      end
    end
  end
  reply[#reply + 1] = used[i]
  reply[#reply + 1] = reset[i]
end
return reply
