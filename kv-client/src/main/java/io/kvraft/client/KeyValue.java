package io.kvraft.client;

/** A key and its value; the arrays are not copied. */
public record KeyValue(byte[] key, byte[] value) {
}
