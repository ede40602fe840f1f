package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/llmrouter/llmrouter/bench/internal/upstream"
)

// Streams counts what Loop's workers did.
type Streams struct {
	Bytes  atomic.Int64 // body bytes read
	Whole  atomic.Int64 // streams read to their [DONE]
	Failed atomic.Int64 // streams that failed after the first opened (not counting those ctx cut)
}

// Loop sends streams back to back until ctx ends, each read to its end,
// as a closed-loop worker does: the first stream's first event (nil) or
// failure is reported on opened; after that a failed stream is counted in
// s and the next one sent.
func Loop(ctx context.Context, client *http.Client, url string, s *Streams, opened chan<- error) {
	first := func(err error) {
		if opened != nil {
			opened <- err
			opened = nil
		}
	}
	for ctx.Err() == nil {
		err := stream(ctx, client, url, s, first)
		if opened != nil {
			first(err) // failed before its first event
			return
		}
		switch {
		case err == nil:
			s.Whole.Add(1)
		case ctx.Err() == nil:
			s.Failed.Add(1)
		}
	}
	first(ctx.Err())
}

// stream sends one stream request and reads it to its end, calling first
// once its first event has arrived.
func stream(ctx context.Context, client *http.Client, url string, s *Streams, first func(error)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(StreamRequest)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+Key)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	br := bufio.NewReaderSize(resp.Body, 1024)
	var last []byte
	for n := 0; ; n++ {
		line, err := br.ReadSlice('\n')
		s.Bytes.Add(int64(len(line)))
		if n == 0 {
			if err != nil || !bytes.HasPrefix(line, []byte("data: ")) {
				return errors.Join(errors.New("no first event"), err)
			}
			first(nil)
		}
		if bytes.HasPrefix(line, []byte("data: ")) {
			last = append(last[:0], line...)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if string(last) != strings.TrimSuffix(upstream.DoneEvent, "\n") {
		return fmt.Errorf("stream without [DONE] (last event %.100q)", last)
	}
	return nil
}
