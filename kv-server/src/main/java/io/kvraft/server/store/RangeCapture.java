package io.kvraft.server.store;

/**
 * One region's data frozen at one applied index, read page by page while writes go on: what a backup
 * session holds: the range's pairs and its system records (sequences, locks), both as of that index.
 * Closing it frees what it pins (a copy of the range, or a RocksDB snapshot).
 */
public interface RangeCapture extends AutoCloseable {

    /** Keys in the capture, or -1 when the engine cannot tell without reading them all. */
    long keyCount();

    /**
     * Pairs of the capture from {@code from} (inclusive; empty = the range's start) in ascending order, into
     * {@code page}; the same {@code from} gives the same page every time.
     */
    ScanPage page(byte[] from, ScanPage.Builder page);

    /**
     * As {@link #page}, for the capture's system records of the range (values: CoordRecord bytes), at the same
     * applied index as its pairs.
     */
    ScanPage systemPage(byte[] from, ScanPage.Builder page);

    /** Frees the capture; idempotent. */
    @Override
    void close();
}
