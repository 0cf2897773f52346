package io.kvraft.client;

/**
 * Numbers [start, end) taken from a sequence: no other call, before or after, gets any of them
 * (unless an operator resets the sequence).
 */
public record SequenceRange(long start, long end) {

    public SequenceRange {
        if (start < 0 || end < start) {
            throw new IllegalArgumentException("not a sequence range: [" + start + ", " + end + ")");
        }
    }

    /** How many numbers the range holds. */
    public long size() {
        return end - start;
    }
}
