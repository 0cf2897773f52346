package io.kvraft.client;

/**
 * One compare-and-put of {@link KvClient#compareAndPutAll}: put {@code update} under {@code key} if its
 * value equals {@code expect} ({@code null} expects the key absent). The arrays are not copied.
 */
public record CasEntry(byte[] key, byte[] expect, byte[] update) {
}
