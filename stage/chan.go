package stage

// Results of recv.
const (
	gotFrame   = iota // a frame was waiting: no time passed blocked
	gotBlocked        // a frame arrived after blocking
	inputClosed
	cancelled
)

// recv takes the next frame from in, blocking until one arrives, in is
// closed, or done is closed. A closed done wins over waiting input so that a
// saturated stage still stops promptly. The non-blocking first attempts keep
// the common case (data waiting) on the channel fast path, and tell the
// caller it need not read the clock: reading it costs more than the hop.
func recv[T any](done <-chan struct{}, in <-chan Frame[T], m *Metrics) (Frame[T], int) {
	select {
	case <-done:
		return Frame[T]{}, cancelled
	default:
	}
	m.observeQueue(len(in))
	select {
	case f, ok := <-in:
		if !ok {
			return f, inputClosed
		}
		return f, gotFrame
	default:
	}
	select {
	case f, ok := <-in:
		if !ok {
			return f, inputClosed
		}
		return f, gotBlocked
	case <-done:
		return Frame[T]{}, cancelled
	}
}

// sendNow hands f to out if there is room, without blocking.
func sendNow[T any](out chan<- Frame[T], f Frame[T]) bool {
	select {
	case out <- f:
		return true
	default:
		return false
	}
}

// sendWait hands f to out, blocking until there is room or done is closed;
// it reports whether f was sent. Callers try sendNow first and read the
// clock only when they must wait.
func sendWait[T any](done <-chan struct{}, out chan<- Frame[T], f Frame[T]) bool {
	select {
	case out <- f:
		return true
	case <-done:
		return false
	}
}

// send is sendNow then sendWait, for callers that do not time the send.
func send[T any](done <-chan struct{}, out chan<- Frame[T], f Frame[T]) bool {
	return sendNow(out, f) || sendWait(done, out, f)
}
