package io.kvraft.client;

import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto.ReadMode;

import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * The pairs of a key range, fetched lazily one page at a time: the range is never held whole, in the
 * client or on a server. Each page is read as the client's scans are (per region, in the view's read
 * mode), and the next page starts after the last key returned, so the iterator carries on across
 * regions that split or move meanwhile. Pages are not one snapshot: a key written behind the cursor is
 * not seen, one written ahead of it is. Blocking, and not thread-safe; {@link #hasNext} fails with a
 * {@link KvException} when a page cannot be read within the operation timeout.
 */
public final class KvIterator implements Iterator<KeyValue> {

    private final RangeOps ranges;
    private final int pageSize;
    private final boolean reverse;
    private final ReadMode mode;
    private final long pageTimeoutMs;
    private byte[] start;
    private byte[] end;
    private boolean exhausted;
    private List<KeyValue> page = List.of();
    private int next;
    private long pages;

    KvIterator(RangeOps ranges, byte[] start, byte[] end, int pageSize, boolean reverse, ReadMode mode,
               long pageTimeoutMs) {
        this.ranges = ranges;
        this.start = start;
        this.end = end;
        this.pageSize = pageSize;
        this.reverse = reverse;
        this.mode = mode;
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
        return pages;
    }

    private void fetch() {
        long deadline = System.nanoTime() + pageTimeoutMs * 1_000_000L;
        RangeOps.Page p;
        try {
            p = ranges.page(start, end, pageSize, reverse, false, mode, deadline).join();
        } catch (RuntimeException e) {
            throw KvException.unwrap(e);
        }
        pages++;
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
