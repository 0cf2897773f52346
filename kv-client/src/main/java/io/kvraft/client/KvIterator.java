package io.kvraft.client;

import io.kvraft.common.KvException;

import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.CompletableFuture;

/**
 * The pairs of a key range, fetched lazily one page at a time: the range is never held whole, in the
 * client or on a server. Each page is read as the client's scans are (per region, in the view's read
 * mode), and the next page starts after the last key returned, so the iterator carries on across
 * regions that split or move meanwhile. Pages are not one snapshot: a key written behind the cursor is
 * not seen, one written ahead of it is. Blocking, and not thread-safe; {@link #hasNext} fails with a
 * {@link KvException} when a page cannot be read within the operation timeout.
 */
public final class KvIterator implements Iterator<KeyValue> {

    /** Reads one page of a range (as {@link RangeOps#page}, in the iterator's read mode). */
    @FunctionalInterface
    interface Pages {
        CompletableFuture<RangeOps.Page> page(byte[] start, byte[] end, int limit, boolean reverse, long deadlineNanos);
    }

    private final Pages pages;
    private final int pageSize;
    private final boolean reverse;
    private final long pageTimeoutMs;
    private byte[] start;
    private byte[] end;
    private boolean exhausted;
    private List<KeyValue> page = List.of();
    private int next;
    private long fetched;

    KvIterator(Pages pages, byte[] start, byte[] end, int pageSize, boolean reverse, long pageTimeoutMs) {
        this.pages = pages;
        this.start = start;
        this.end = end;
        this.pageSize = pageSize;
        this.reverse = reverse;
        this.pageTimeoutMs = pageTimeoutMs;
        this.exhausted = end.length > 0 && java.util.Arrays.compareUnsigned(start, end) >= 0;
    }

    @Override
    public boolean hasNext() {
        while (next >= page.size() && !exhausted) {
            fetch();
        }
        return next < page.size();
    }

    @Override
    public KeyValue next() {
        if (!hasNext()) {
            throw new NoSuchElementException();
        }
        return page.get(next++);
    }

    /** Pages fetched so far (a page may be empty where a region's part of the range holds no key). */
    public long pages() {
        return fetched;
    }

    private void fetch() {
        long deadline = System.nanoTime() + pageTimeoutMs * 1_000_000L;
        RangeOps.Page p;
        try {
            p = pages.page(start, end, pageSize, reverse, deadline).join();
        } catch (RuntimeException e) {
            throw KvException.unwrap(e);
        }
        fetched++;
        page = p.pairs();
        next = 0;
        if (p.resumeKey() == null) {
            exhausted = true;
        } else if (reverse) {
            end = p.resumeKey();
        } else {
            start = p.resumeKey();
        }
    }
}
