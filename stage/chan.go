package stage

// Results of recv.
const (
	gotFrame = iota
	inputClosed
	cancelled
)

// recv takes the next frame from in, blocking until one arrives, in is
// closed, or done is closed. A closed done wins over waiting input so that a
// saturated stage still stops promptly. The non-blocking first attempts keep
// the common case (data waiting) on the channel fast path.
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
		return f, gotFrame
	case <-done:
		return Frame[T]{}, cancelled
	}
}

// send hands f to out, blocking until there is room or done is closed; it
// reports whether f was sent.
func send[T any](done <-chan struct{}, out chan<- Frame[T], f Frame[T]) bool {
	select {
	case out <- f:
		return true
	default:
	}
	select {
	case out <- f:
		return true
	case <-done:
		return false
	}
}
