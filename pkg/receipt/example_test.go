package receipt_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/boxoffice/boxoffice/pkg/pass"
	"github.com/boxoffice/boxoffice/pkg/receipt"
)

// A verifier holds a receipt (the join's "receipt", or the file the page
// downloads) and the key set of GET /.well-known/jwks.json, and checks it
// offline: the signed root, the event, the inclusion path, and whose it
// is.
func ExampleVerifyFor() {
	// the gateway's side, for the example: two joins signed as one batch
	keys, _ := pass.ParseKeys([]string{"k1:" + base64.RawURLEncoding.EncodeToString(make([]byte, 32))})
	jwks, _ := keys.JWKS()
	joins := []receipt.Join{
		{EventID: "demo", Seq: 41, At: time.UnixMilli(1_795_880_412_345), UserID: "alice"},
		{EventID: "demo", Seq: 42, At: time.UnixMilli(1_795_880_412_350), UserID: "bob"},
	}
	out := make([]receipt.Receipt, len(joins))
	_ = receipt.Sign(pass.NewSigner(keys, "boxoffice"), joins, out)
	file := out[1].AppendJSON(nil)

	// the verifier's side
	r, err := receipt.Parse(file)
	if err != nil {
		fmt.Println(err)
		return
	}
	head, err := receipt.VerifyFor(r, jwks, "demo")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("join", r.Leaf.Seq, "of a batch of", head.Size, "- bob's:", receipt.Binds(r, head, "bob"))
	_, err = receipt.VerifyFor(r, jwks, "other")
	fmt.Println(errors.Is(err, receipt.ErrWrongEvent))
	// Output:
	// join 42 of a batch of 2 - bob's: true
	// true
}
