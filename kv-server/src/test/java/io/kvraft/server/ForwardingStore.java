package io.kvraft.server;

import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.KvStore;
import io.kvraft.server.store.RangeCapture;
import io.kvraft.server.store.ScanPage;
import io.kvraft.server.store.StoreBatch;

import java.io.IOException;
import java.nio.file.Path;

/** A store that hands every call to another: tests override the calls they hold back or watch. */
abstract class ForwardingStore implements KvStore {

    protected final KvStore store;

    ForwardingStore(KvStore store) {
        this.store = store;
    }

    @Override
    public String engine() {
        return store.engine();
    }

    @Override
    public byte[] get(byte[] key) {
        return store.get(key);
    }

    @Override
    public byte[] read(int region, byte[] key) {
        return store.read(region, key);
    }

    @Override
    public byte[] getSystem(byte[] key) {
        return store.getSystem(key);
    }

    @Override
    public ScanPage scanSystem(int region, KeyRange range, ScanPage.Builder page) {
        return store.scanSystem(region, range, page);
    }

    @Override
    public void apply(int region, long appliedIndex, StoreBatch batch) {
        store.apply(region, appliedIndex, batch);
    }

    @Override
    public byte[] regionState(int region) {
        return store.regionState(region);
    }

    @Override
    public long appliedIndex(int region) {
        return store.appliedIndex(region);
    }

    @Override
    public void writeSnapshot(KeyRange range, Path dir) throws IOException {
        store.writeSnapshot(range, dir);
    }

    @Override
    public void loadSnapshot(int region, long appliedIndex, KeyRange range, Path dir, byte[] state) throws IOException {
        store.loadSnapshot(region, appliedIndex, range, dir, state);
    }

    @Override
    public ScanPage scan(int region, KeyRange range, boolean reverse, ScanPage.Builder page) {
        return store.scan(region, range, reverse, page);
    }

    @Override
    public RangeCapture capture(int region, KeyRange range) {
        return store.capture(region, range);
    }

    @Override
    public long approximateCount(KeyRange range) {
        return store.approximateCount(range);
    }

    @Override
    public long approximateKeys(KeyRange range) {
        return store.approximateKeys(range);
    }

    @Override
    public long approximateBytes(KeyRange range) {
        return store.approximateBytes(range);
    }

    @Override
    public long compactionBytes() {
        return store.compactionBytes();
    }

    @Override
    public byte[] middleKey(int region, KeyRange range) {
        return store.middleKey(region, range);
    }

    @Override
    public void close() throws IOException {
        store.close();
    }
}
