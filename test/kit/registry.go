package kit

import "testing"

// drivers is the one table of wire API drivers, in a stable order.
var drivers = []Driver{anthropicDriver{}, chatDriver{}, responsesDriver{}, geminiDriver{}}

// Drivers lists every wire API driver.
func Drivers() []Driver { return append([]Driver(nil), drivers...) }

// Lookup returns the driver of the API named name.
func Lookup(name string) (Driver, bool) {
	for _, d := range drivers {
		if d.Name() == name {
			return d, true
		}
	}
	return nil, false
}

// ForMock returns the driver whose generate route the mock names api
// (mock.Recorded.API).
func ForMock(api string) (Driver, bool) {
	for _, d := range drivers {
		if d.MockAPI() == api {
			return d, true
		}
	}
	return nil, false
}

// Get returns the driver of name or fails the test.
func Get(t testing.TB, name string) Driver {
	t.Helper()
	d, ok := Lookup(name)
	if !ok {
		t.Fatalf("kit: no driver for API %q", name)
	}
	return d
}
