-- positions.lua: a call's position reads (get_position.lua, get_position_batch.lua).

-- read_positions answers the position reads reqs_at placed
-- (get_position.lua's header says what one does and answers) and returns
-- their replies in a list. It reads the event's config, waiting's size,
-- the users' waiting scores and states and each limit key once, and writes
-- the presence entries and each counted limit key once
-- (get_position_batch.lua); a read changes nothing another read looks at.
local function read_positions()
  local replies = {}
  local c = redis.call('HMGET', K_CONFIG, 'total', 'sold', 'served', 'abandon_ms', 'admit_per_minute', 'sales_start_ms',
    'hold_pause_ms', 'hold_paused_at', 'sales_end_ms', 'pq_lo', 'pqd', 'draw_digest')
  if not c[1] then
    for i = 1, R_N do replies[i] = {'event_not_found'} end
    return replies
  end
  reqs_read()
  local sold_out = 0
  if num(c[2]) >= num(c[1]) then sold_out = 1 end
  local served, abandon, cap, start_ms = num(c[3]), num(c[4]), num(c[5]), num(c[6])
  local waiting, rate_b, rate, nseen, seen
  local now, now_s = clock()
  local shift = now - hold_clock(now, c[7], c[8]) -- deadlines are on the hold clock
  local ended = 0
  if sales_ended(now, c[9]) then ended = 1 end

  for i = 1, R_N do
    local user = R_USERS[i]
    local wait = req_wait(i, now)
    if wait > 0 then
      replies[i] = {'rate_limited', wait}
    else
      if L_M > 0 then limits_take(now, 0) end
      if not waiting then waiting = redis.call('ZCARD', K_WAITING) end
      local b = math.floor(now / RATE_BUCKET_MS)
      if b ~= rate_b then rate_b, rate = b, admitted_last_minute(now) end
      -- a waiting user is only a member of waiting (base.lua): score = sequence
      local score = tonumber(R_SCORE[i])
      if not score then
        local state = R_STATE[i]
        -- (a state field 'waiting' without a waiting entry: none to report)
        if not state or state == 'waiting' then
          replies[i] = {'not_found', sold_out, served, waiting, rate, cap, start_ms, ended}
        elseif state == 'prequeued' then
          -- in a later phase's pre-queue (draw.lua): position 0 until its
          -- draw, with that phase's start
          if abandon > 0 then
            if not seen then seen, nseen = {}, 0 end
            seen[nseen + 1], seen[nseen + 2] = now_s, user
            nseen = nseen + 2
          end
          replies[i] = {'ok', 'waiting', num(redis.call('HGET', K_USEQ, user)), 0, '', '', 0, sold_out, served,
            waiting, rate, cap, pq_start_of(user), now, ended}
        else
          local deadline = tonumber(redis.call('ZSCORE', K_ACTIVE, user))
          if deadline then deadline = deadline + shift else deadline = 0 end
          replies[i] = {'ok', state, num(redis.call('HGET', K_USEQ, user)), 0, redis.call('HGET', K_USEAT, user) or '',
            redis.call('HGET', K_UPAY, user) or '', deadline, sold_out, served,
            waiting, rate, cap, start_ms, now, ended}
        end
      else
        -- a pre-queued user's place (score below 0, its draw key) is known
        -- once the draw is made (draw_digest, booking.Store.CloseDraw): 0
        -- until then, as before the start
        local drawing = score < 0 and not c[12]
        score = wait_seq(user, score, c[10]) -- pre-queued or drawn: a draw key
        local position = 0
        if now >= start_ms and not drawing then position = redis.call('ZRANK', K_WAITING, user) + 1 end
        -- a later phase's draw pending: its closed list ranks before
        -- those who joined after its start
        if c[11] then
          local _, _, base, n = pq_parse(c[11])
          if score > base then position = position + num(n) end
        end
        if abandon > 0 then
          if not seen then seen, nseen = {}, 0 end
          seen[nseen + 1], seen[nseen + 2] = now_s, user
          nseen = nseen + 2
        end
        replies[i] = {'ok', 'waiting', score, position, '', '', 0, sold_out, served, waiting, rate, cap, start_ms, now, ended}
      end
    end
  end

  if seen then bulk('ZADD', K_SEEN, seen, nseen) end
  if L_M > 0 then limits_write() end
  return replies
end
