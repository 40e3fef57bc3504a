package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var _ EditJournal = (*Redis)(nil)

// journalKey is P:{T:S}:j, the session's journal hash, in the session's
// slot. Its fields:
//
//	n          the last seq given
//	d:<seq>    the entry's JSON without its Seq (the field name has it)
//	s:<seq>    Status "\n" Reason once SetEditStatus set them (they
//	           override the JSON's)
//	m:<seq>    len(path) ":" path callID: what trimming the entry unindexes
//	p:<path>   the path's seqs, oldest first, space separated
//	c:<callID> the call's seqs, space separated
func (r *Redis) journalKey(k Key) string {
	return r.prefix + ":{" + k.Tenant + ":" + k.Session + "}:j"
}

// journalOrderKey is P:{T:S}:jo, a sorted set of the session's live seqs
// scored by seq: the order Edits lists and the cap trims.
func (r *Redis) journalOrderKey(k Key) string {
	return r.prefix + ":{" + k.Tenant + ":" + k.Session + "}:jo"
}

// journalLib holds the Lua helpers the journal scripts share: split a
// space-separated seq list, remove a seq from a list field, and drop an
// entry (its fields, its order member, its call's list and, unless the
// caller trims that list itself, its path's list).
const journalLib = `
local J, O = KEYS[1], KEYS[2]
local function split(s)
  local t = {}
  if s then for w in string.gmatch(s, '%S+') do t[#t+1] = w end end
  return t
end
local function unlist(field, seq)
  local t, out = split(redis.call('HGET', J, field)), {}
  for _, w in ipairs(t) do if w ~= seq then out[#out+1] = w end end
  if #out == 0 then redis.call('HDEL', J, field) else redis.call('HSET', J, field, table.concat(out, ' ')) end
end
local function drop(seq, keepPathList)
  local m = redis.call('HGET', J, 'm:' .. seq)
  redis.call('HDEL', J, 'd:' .. seq, 's:' .. seq, 'm:' .. seq)
  redis.call('ZREM', O, seq)
  if not m then return end
  local colon = string.find(m, ':', 1, true)
  local plen = tonumber(string.sub(m, 1, colon - 1))
  local path, call = string.sub(m, colon + 1, colon + plen), string.sub(m, colon + plen + 1)
  if call ~= '' then unlist('c:' .. call, seq) end
  if not keepPathList then unlist('p:' .. path, seq) end
end
`

// appendEditsSource appends entries in one step: the next seqs, each
// entry's fields and indexes, the per-path trim, the session cap, and the
// TTL of both keys.
//
//	KEYS[1]  journal hash       KEYS[2]  order sorted set
//	ARGV[1]  keep per path      ARGV[2]  entries per session
//	ARGV[3]  TTL in ms
//	ARGV[4+3i], ARGV[5+3i], ARGV[6+3i]  path, call id and JSON of entry i
//
// It returns the first seq given; entry i has that plus i.
const appendEditsSource = journalLib + `
local keep, cap = tonumber(ARGV[1]), tonumber(ARGV[2])
local n = (#ARGV - 3) / 3
local first = redis.call('HINCRBY', J, 'n', n) - n + 1
local touched, order = {}, {}
for i = 0, n - 1 do
  local path, call, data = ARGV[4 + 3*i], ARGV[5 + 3*i], ARGV[6 + 3*i]
  local seq = tostring(first + i)
  redis.call('HSET', J, 'd:' .. seq, data, 'm:' .. seq, #path .. ':' .. path .. call)
  redis.call('ZADD', O, first + i, seq)
  local pf = 'p:' .. path
  local cur = redis.call('HGET', J, pf)
  redis.call('HSET', J, pf, cur and (cur .. ' ' .. seq) or seq)
  if call ~= '' then
    local cf = 'c:' .. call
    local cc = redis.call('HGET', J, cf)
    redis.call('HSET', J, cf, cc and (cc .. ' ' .. seq) or seq)
  end
  if not touched[pf] then touched[pf] = true; order[#order+1] = pf end
end
for _, pf in ipairs(order) do
  local t = split(redis.call('HGET', J, pf))
  if #t > keep then
    for i = 1, #t - keep do drop(t[i], true) end
    redis.call('HSET', J, pf, table.concat(t, ' ', #t - keep + 1))
  end
end
local over = redis.call('ZCARD', O) - cap
if over > 0 then
  for _, seq in ipairs(redis.call('ZRANGE', O, 0, over - 1)) do drop(seq, false) end
end
redis.call('PEXPIRE', J, ARGV[3])
redis.call('PEXPIRE', O, ARGV[3])
return first
`

// setEditStatusSource sets the status of a call's entries.
//
//	KEYS[1]  journal hash       KEYS[2]  order sorted set
//	ARGV[1]  call id            ARGV[2]  status "\n" reason
//
// It returns how many entries it set.
const setEditStatusSource = journalLib + `
local n = 0
for _, seq in ipairs(split(redis.call('HGET', J, 'c:' .. ARGV[1]))) do
  if redis.call('HEXISTS', J, 'd:' .. seq) == 1 then
    redis.call('HSET', J, 's:' .. seq, ARGV[2])
    n = n + 1
  end
end
return n
`

// editsSource reads entries, oldest first.
//
//	KEYS[1]  journal hash       KEYS[2]  order sorted set
//	ARGV[1]  "" for every path, else "p" and ARGV[2] the path
//
// It returns seq, JSON, status line ("" when unchanged) for each entry.
const editsSource = journalLib + `
local seqs
if ARGV[1] == '' then seqs = redis.call('ZRANGE', O, 0, -1) else seqs = split(redis.call('HGET', J, 'p:' .. ARGV[2])) end
local out = {}
for _, seq in ipairs(seqs) do
  local v = redis.call('HMGET', J, 'd:' .. seq, 's:' .. seq)
  if v[1] then
    out[#out+1] = seq; out[#out+1] = v[1]; out[#out+1] = v[2] or ''
  end
end
return out
`

var (
	appendEditsScript   = redis.NewScript(appendEditsSource)
	setEditStatusScript = redis.NewScript(setEditStatusSource)
	editsScript         = redis.NewScript(editsSource)
)

// storedJSON is an entry as the hash keeps it: Seq lives in the field
// name, Status and Reason in the s: field once changed.
type storedJSON struct {
	EditRecord
	Seq int64 `json:"seq,omitempty"`
}

// AppendEdits implements EditJournal with one script (EVALSHA; EVAL once
// more after a script cache flush). keep <= 0 means DefaultEditKeep.
func (r *Redis) AppendEdits(ctx context.Context, key Key, keep int, recs []EditRecord) ([]EditRecord, error) {
	if err := r.check(ctx, "journal"); err != nil {
		return nil, err
	}
	if !key.Valid() {
		return nil, ErrInvalidKey
	}
	if len(recs) == 0 {
		return []EditRecord{}, nil
	}
	now := time.Now().UTC().Round(0)
	out := make([]EditRecord, len(recs))
	args := make([]any, 0, 3+3*len(recs))
	args = append(args, editKeep(keep), MaxEditsPerSession, r.ttl.Milliseconds())
	for i, rec := range recs {
		out[i] = storedEdit(rec, 0, now)
		data, err := json.Marshal(storedJSON{EditRecord: out[i]})
		if err != nil {
			return nil, r.fail(ctx, "journal", fmt.Errorf("encode edit: %w", err))
		}
		args = append(args, out[i].Path, out[i].CallID, data)
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	first, err := appendEditsScript.Run(cctx, r.client, r.journalKeys(key), args...).Int64()
	if err != nil {
		return nil, r.fail(ctx, "journal", err)
	}
	for i := range out {
		out[i].Seq = first + int64(i)
	}
	return out, nil
}

// SetEditStatus implements EditJournal with one script. It counts the
// entries of callID it set, whether or not their status was already
// status; it does not refresh the TTL.
func (r *Redis) SetEditStatus(ctx context.Context, key Key, callID, status, reason string) (int, error) {
	if err := r.check(ctx, "journal"); err != nil {
		return 0, err
	}
	if !key.Valid() {
		return 0, ErrInvalidKey
	}
	if err := checkEditStatus(status); err != nil {
		return 0, err
	}
	if callID == "" {
		return 0, nil
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	n, err := setEditStatusScript.Run(cctx, r.client, r.journalKeys(key), callID, status+"\n"+reason).Int()
	if err != nil {
		return 0, r.fail(ctx, "journal", err)
	}
	return n, nil
}

// Edits implements EditJournal with one script.
func (r *Redis) Edits(ctx context.Context, key Key, path string) ([]EditRecord, error) {
	if err := r.check(ctx, "journal"); err != nil {
		return nil, err
	}
	if !key.Valid() {
		return nil, fmt.Errorf("%w (%w)", ErrNotFound, ErrInvalidKey)
	}
	args := []any{""}
	if path != "" {
		args = []any{"p", path}
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	vals, err := editsScript.Run(cctx, r.client, r.journalKeys(key), args...).StringSlice()
	if err != nil {
		return nil, r.fail(ctx, "journal", err)
	}
	out := make([]EditRecord, 0, len(vals)/3)
	for i := 0; i+2 < len(vals); i += 3 {
		rec, err := decodeEdit(vals[i], vals[i+1], vals[i+2])
		if err != nil {
			return nil, r.fail(ctx, "journal", err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// Edit implements EditJournal with one HMGET.
func (r *Redis) Edit(ctx context.Context, key Key, seq int64) (EditRecord, error) {
	if err := r.check(ctx, "journal"); err != nil {
		return EditRecord{}, err
	}
	if !key.Valid() {
		return EditRecord{}, fmt.Errorf("%w (%w)", ErrNotFound, ErrInvalidKey)
	}
	s := strconv.FormatInt(seq, 10)
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	vals, err := r.client.HMGet(cctx, r.journalKey(key), "d:"+s, "s:"+s).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return EditRecord{}, r.fail(ctx, "journal", err)
	}
	data, ok := vals[0].(string)
	if !ok {
		return EditRecord{}, fmt.Errorf("state: edit %d: %w", seq, ErrNotFound)
	}
	status, _ := vals[1].(string)
	rec, err := decodeEdit(s, data, status)
	if err != nil {
		return EditRecord{}, r.fail(ctx, "journal", err)
	}
	return rec, nil
}

func (r *Redis) journalKeys(k Key) []string {
	return []string{r.journalKey(k), r.journalOrderKey(k)}
}

// decodeEdit rebuilds an entry from its seq field, JSON and status line.
func decodeEdit(seq, data, status string) (EditRecord, error) {
	var rec EditRecord
	if err := json.Unmarshal([]byte(data), &rec); err != nil {
		return EditRecord{}, fmt.Errorf("decode edit %s: %w", seq, err)
	}
	n, err := strconv.ParseInt(seq, 10, 64)
	if err != nil {
		return EditRecord{}, fmt.Errorf("decode edit %q: %w", seq, err)
	}
	rec.Seq = n
	if st, reason, ok := strings.Cut(status, "\n"); ok {
		rec.Status, rec.Reason = st, reason
	}
	return rec, nil
}
