package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// Hold opens one stream, reports on opened its first chunk (nil) or its
// failure, then reads until ctx ends or the stream does, adding the bytes
// it reads to n.
func Hold(ctx context.Context, client *http.Client, url string, n *atomic.Int64, opened chan<- error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(StreamRequest)))
	if err != nil {
		opened <- err
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		opened <- err
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		opened <- fmt.Errorf("status %d: %s", resp.StatusCode, b)
		return
	}
	br := bufio.NewReaderSize(resp.Body, 4096)
	line, err := br.ReadSlice('\n')
	if err != nil || !bytes.HasPrefix(line, []byte("data: ")) {
		opened <- errors.Join(errors.New("no first chunk"), err)
		return
	}
	opened <- nil
	// Until the test cancels ctx (the transport then ends the body).
	_, _ = io.Copy(counter{n}, br)
}

// counter counts bytes written to it.
type counter struct{ n *atomic.Int64 }

func (c counter) Write(b []byte) (int, error) {
	c.n.Add(int64(len(b)))
	return len(b), nil
}
