-- payments.lua: the payment registry (pays): reading and writing a payment id's record.

-- A payment id's record (K_PAYS) as a table {user, seq, seat, status, at},
-- or nil when the id was never issued for user's event. A payment started
-- before the registry existed is read from its user's current hold.
local function payment_record(user, pid)
  local v = redis.call('HGET', K_PAYS, pid)
  if v then
    local u, seq, seat, status, at = string.match(v, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
    local n = num(seq)
    if seq and string.find(seq, '[^%d]') and u == user and redis.call('HGET', K_UPAY, user) == pid then
      -- an earlier version wrote the sequence in exponent form (its
      -- digits past 14 lost, int): the user's hold is still this
      -- payment's, so its sequence is the user's (the next set_payment
      -- writes it whole)
      n = user_seq(user)
    end
    return {user = u, seq = n, seat = seat, status = status, at = num(at)}
  end
  if redis.call('HGET', K_UPAY, user) ~= pid then return nil end
  local state, status = user_state(user), 'pending'
  if state == 'completed' or state == 'failed' then status = state end
  return {user = user, seq = user_seq(user),
    seat = redis.call('HGET', K_USEAT, user) or '', status = status, at = 0}
end

-- The payment record of pid for user (payment_record), or nil and the
-- reply for a webhook that names none of this user's payments:
-- {'not_found'} when the user never joined, {'payment_mismatch'} when the
-- id is not theirs.
local function user_payment(user, pid)
  local p = payment_record(user, pid)
  if not p then
    if not user_state(user) then return nil, {'not_found'} end
    return nil, {'payment_mismatch'}
  end
  if p.user ~= user then return nil, {'payment_mismatch'} end
  return p
end

-- Record a payment id's new status (and when it was reached).
local function set_payment(pid, p, status, now)
  p.status, p.at = status, num(now)
  redis.call('HSET', K_PAYS, pid, p.user .. '|' .. int(p.seq) .. '|' .. p.seat .. '|' .. status .. '|' .. now)
end
