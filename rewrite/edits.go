package rewrite

import (
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// EditOps are one API's primitives for the edits of conv.RequestEdits.
// ApplyEdits runs them in the order the Codec contract fixes.
type EditOps struct {
	// Tools renders tool definitions in the API's shape.
	Tools *ToolRenderer
	// AddTools inserts the rendered, comma-separated definitions.
	AddTools     func(body, items []byte) ([]byte, error)
	AppendSystem func(body []byte, texts []string) ([]byte, error)
	AppendUser   func(body []byte, texts []string) ([]byte, error)
	SetMax       func(body []byte, n int64) ([]byte, error)
	// Parsed is the request's memory of the body it parsed (nil: none).
	// ToolsKey, SystemKey and MaxKey name the root member AddTools,
	// AppendSystem and SetMax edit when that member exists and they edit
	// nothing else ("": not so); the ops run through Parsed.EditMembers,
	// each on its member alone, with one copy of the body for them all.
	Parsed                      *Parsed
	ToolsKey, SystemKey, MaxKey string
	// InsertTools and InsertSystem, when set, are AddTools and
	// AppendSystem as insertions into the value of ToolsKey and SystemKey
	// (MemberOp.Insert): the same bytes, without copying the member.
	InsertTools  func(value, items []byte) (at int, ins []byte, ok bool)
	InsertSystem func(value []byte, texts []string) (at int, ins []byte, ok bool)
	// InsertSystemHead says that InsertSystem reads only the first
	// element of SystemKey's array value and whether it has one
	// (MemberOp.InsertHead): where SystemKey is also the conversation
	// member, it goes in next to a ledger replay's user-text splices.
	InsertSystemHead bool
}

// InsertElements is AppendTools's edit of an array value as an insertion:
// items after its last element (a comma between), or just after its '['
// when it is empty, as AppendElements writes them; ok is false unless
// value is an array.
func InsertElements(value, items []byte) (at int, ins []byte, ok bool) {
	if len(value) < 2 || value[0] != '[' {
		return 0, nil, false
	}
	at = jsonkit.LastValueEnd(gjson.Result{Type: gjson.JSON, Raw: jsonkit.UnsafeString(value)})
	if at < 0 {
		return 1, items, true
	}
	return at, append(append(make([]byte, 0, len(items)+1), ','), items...), true
}

// InsertSuffix appends texts to a string value as SuffixText and
// AppendToString do, as an insertion before its closing quote; ok is false
// unless value is a string.
func InsertSuffix(value []byte, texts []string) (at int, ins []byte, ok bool) {
	if len(value) < 2 || value[0] != '"' {
		return 0, nil, false
	}
	esc := jsonkit.AppendString(nil, SuffixText(jsonkit.UnsafeString(value[1:len(value)-1]), texts))
	return len(value) - 1, esc[1 : len(esc)-1], true
}

// ApplyEdits applies e to body with ops: tools, system, user text, output
// limit. It returns body itself when e is empty.
func ApplyEdits(body []byte, e conv.RequestEdits, ops EditOps) ([]byte, error) {
	if e.Empty() {
		ops.Parsed.Escape() // body goes to the caller as it is
		return body, nil
	}
	steps, err := editSteps(make([]MemberOp, 0, maxSteps), e, ops)
	if err != nil {
		return nil, err
	}
	return ops.Parsed.EditMembers(body, steps)
}

// UserTextsEditor is implemented by the codecs whose request edits can
// take a ledger replay's user texts in the same copy of the body
// (ApplyEditsWithUserTexts): the bytes of AppendUserTexts(texts) then
// ApplyEdits(e).
type UserTextsEditor interface {
	ApplyEditsWithUserTexts(body []byte, texts []UserTexts, e conv.RequestEdits) ([]byte, error)
}

// ApplyEditsWithUserTexts is AppendUserTextsBatched(texts) then
// ApplyEdits(e), the bytes of the one then the other, in one copy of a
// body Parsed indexes: the user texts (a ledger replay's) become splices of
// the conversation member that EditMembers makes with the request edits.
// Otherwise it is the two in turn.
func ApplyEditsWithUserTexts(body []byte, texts []UserTexts, e conv.RequestEdits, ops EditOps, tc TurnCodec, loc UserTurnLocator) ([]byte, error) {
	if len(texts) == 0 {
		return ApplyEdits(body, e, ops)
	}
	inTurn := func(out []byte, err error) ([]byte, error) {
		if err != nil {
			return nil, err
		}
		return ApplyEdits(out, e, ops)
	}
	if ops.Parsed.IndexOf(body) == nil {
		return inTurn(AppendUserTextsBatched(tc, loc, ops.Parsed, body, texts))
	}
	splices, ok := UserTextSplices(tc, loc, ops.Parsed, body, texts)
	if !ok { // what AppendUserTextsBatched would find again before falling back
		return inTurn(appendUserTextsFallback(tc, body, texts))
	}
	steps := make([]MemberOp, 1, 1+maxSteps)
	steps[0] = MemberOp{Key: loc.ConversationKey(), Splices: splices,
		Op: func(b []byte) ([]byte, error) { return appendUserTextsOneByOne(tc, b, texts) }}
	steps, err := editSteps(steps, e, ops)
	if err != nil {
		return nil, err
	}
	return ops.Parsed.EditMembers(body, steps)
}

// editSteps appends e as EditMembers ops to steps, in the order the Codec
// contract fixes: tools, system, user text, output limit. The ops' closures
// share one copy of their arguments (editArgs), not one each.
func editSteps(steps []MemberOp, e conv.RequestEdits, ops EditOps) ([]MemberOp, error) {
	if e.Empty() {
		return steps, nil
	}
	a := &editArgs{e: e, ops: ops}
	if len(e.AddTools) > 0 {
		var err error
		if a.items, err = ops.Tools.Render(nil, e.AddTools); err != nil {
			return nil, err
		}
		add := MemberOp{Key: ops.ToolsKey, Op: a.addTools}
		if ops.InsertTools != nil {
			add.Insert = a.insertTools
		}
		steps = append(steps, add)
	}
	if len(e.AppendSystem) > 0 {
		sys := MemberOp{Key: ops.SystemKey, Op: a.appendSystem}
		if ops.InsertSystem != nil {
			sys.Insert = a.insertSystem
			sys.InsertHead = ops.InsertSystemHead
		}
		steps = append(steps, sys)
	}
	if len(e.AppendUserText) > 0 {
		steps = append(steps, MemberOp{Key: "", Op: a.appendUser})
	}
	if e.SetMaxOutputTokens > 0 {
		steps = append(steps, MemberOp{Key: ops.MaxKey, Op: a.setMax})
	}
	return steps, nil
}

// maxSteps is the most ops editSteps makes.
const maxSteps = 4

// editArgs are the arguments of editSteps's ops.
type editArgs struct {
	e     conv.RequestEdits
	ops   EditOps
	items []byte // the rendered AddTools
}

func (a *editArgs) addTools(b []byte) ([]byte, error) { return a.ops.AddTools(b, a.items) }
func (a *editArgs) insertTools(v []byte) (int, []byte, bool) {
	return a.ops.InsertTools(v, a.items)
}
func (a *editArgs) appendSystem(b []byte) ([]byte, error) {
	return a.ops.AppendSystem(b, a.e.AppendSystem)
}
func (a *editArgs) insertSystem(v []byte) (int, []byte, bool) {
	return a.ops.InsertSystem(v, a.e.AppendSystem)
}
func (a *editArgs) appendUser(b []byte) ([]byte, error) {
	return a.ops.AppendUser(b, a.e.AppendUserText)
}
func (a *editArgs) setMax(b []byte) ([]byte, error) { return a.ops.SetMax(b, a.e.SetMaxOutputTokens) }

// AppendTools returns an AddTools that appends to the top-level array key,
// creating it when absent.
func AppendTools(key string) func(body, items []byte) ([]byte, error) {
	return func(body, items []byte) ([]byte, error) { return AppendToArrayMember(body, key, items) }
}

// SetMaxKey returns a SetMax that sets the top-level integer key.
func SetMaxKey(key string) func(body []byte, n int64) ([]byte, error) {
	return func(body []byte, n int64) ([]byte, error) { return SetTopLevelInt(body, key, n) }
}

// ParseMessages builds the view of every element of arr (the array member
// key of b) with parse, through the view cache of b (tagged p; none: no
// cache), sharing one tool-name table across the conversation. Errors name
// the element, e.g. messages[3].content.
//
// When the index memo keeps b (a long body), the elements that b shares
// byte for byte with the conversation's previous body are that body's
// views, not looked up again, and ParseMessages also returns the messages'
// anchors (conv.Anchors; nil otherwise), computed only for the new ones.
// The returned slices are shared with the memo: read-only (appending to
// them is fine: their capacity is their length).
func ParseMessages(b *Body, arr gjson.Result, key string, p ViewParser, parse func(gjson.Result, *ToolNames) (conv.Message, error)) ([]conv.Message, []string, error) {
	msgs, anchors, _, _, err := b.parseElems(arr, key, p, parse, true)
	return msgs, anchors, err
}
