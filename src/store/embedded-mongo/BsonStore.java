import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import org.h2.mvstore.DataUtils;
import org.h2.mvstore.MVMap;
import org.h2.mvstore.MVStore;
import org.h2.mvstore.WriteBuffer;
import org.h2.mvstore.type.BasicDataType;
import org.h2.mvstore.type.DataType;

import de.bwaldvogel.mongo.backend.KeyValue;
import de.bwaldvogel.mongo.backend.Missing;
import de.bwaldvogel.mongo.backend.QueryResult;
import de.bwaldvogel.mongo.backend.ValueComparator;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.wire.bson.BsonDecoder;
import de.bwaldvogel.mongo.wire.bson.BsonEncoder;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

/**
 * The H2 MVStore of the embedded database, with documents stored as BSON.
 *
 * <p>The library's H2 backend opens its maps with H2's default {@code ObjectDataType}, which writes a
 * {@link Document} and an index key ({@link KeyValue}) with Java serialization, and compares two index keys by
 * serializing both: every insert into a unique index (every collection has one, on {@code _id}) serialized
 * keys at each step of its binary search. That was most of the database's CPU under load (JFR: about half
 * in {@code ObjectOutputStream}). Here a collection's documents are stored as BSON (the wire format, with the
 * library's own encoder and decoder) and document positions as BSON values, compared in memory by the library's
 * {@link ValueComparator}: no serialization on a comparison. Indexes are not stored: they are kept in memory
 * and rebuilt from the documents on open ({@code UniqueIndex}, {@code SecondaryIndex}); the unique index maps
 * of stores written before ({@link KeyType}) are not copied by a conversion and are removed on open.
 *
 * <p>A store written by the library's own types (every store made before this format) is copied into the new
 * format once when it is opened, map by map, and then replaces the old file; the store records its format in
 * the map {@value #FORMAT_MAP}.
 */
final class BsonStore {

    /** The map that records the store's format; absent in a store of the library's own types. */
    static final String FORMAT_MAP = "embedded-mongo.format";
    private static final String FORMAT = "bson-1";

    private BsonStore() {
    }

    /**
     * Opens (creating or converting) the store in {@code file}, committing in the background every
     * {@code commitIntervalMs}. Pages are not compressed: LZF took a tenth of the database's CPU under the
     * send benchmark, for a file that only a development machine keeps. Pages split at 4 KiB rather than H2's
     * default: a commit writes every page changed since the last one whole, and documents updated in place at
     * random (webhook deliveries, messages) each dirty a page; smaller pages re-encode fewer unchanged documents
     * (the webhook benchmark: about a quarter more deliveries/s draining a backlog, a seventh more from new events).
     *
     * @throws IOException when a store of the old format cannot be replaced by its converted copy
     */
    static MVStore open(String file, int commitIntervalMs) throws IOException {
        MVStore.Builder builder = new MVStore.Builder().fileName(file).pageSplitSize(4 * 1024);
        MVStore store = builder.open();
        if (!store.hasMap(FORMAT_MAP) && store.getMapNames().stream().anyMatch(name -> !name.equals(FORMAT_MAP))) {
            store.close();
            convert(file);
            store = builder.open();
        }
        store.openMap(FORMAT_MAP).put("format", FORMAT);
        store.setAutoCommitDelay(commitIntervalMs);
        return store;
    }

    /**
     * Opens the map {@code name} of {@code store} with the types of what it holds, by the names the library's
     * H2 backend gives its maps: {@code databases.<db>.<collection>} (documents by position),
     * {@code <db>.<collection>._index_<name>} (positions by index key); any other map (metadata) with H2's
     * default types. Once open, the library's own {@code openMap(name)} returns this same map.
     */
    static <K, V> MVMap<K, V> openMap(MVStore store, String name) {
        MVMap.Builder<K, V> builder = new MVMap.Builder<>();
        if (name.startsWith("databases.")) {
            builder.keyType(cast(ValueType.INSTANCE)).valueType(cast(DocumentType.INSTANCE));
        } else if (name.contains("._index_")) {
            builder.keyType(cast(KeyType.INSTANCE)).valueType(cast(ValueType.INSTANCE));
        }
        return store.openMap(name, builder);
    }

    /**
     * Removes the map {@code name} of a unique index that a store of this format kept before unique indexes moved
     * to memory ({@code UniqueIndex}), if there is one: opened with its types first, so that H2 reads it as
     * written while it frees its pages.
     */
    static void removeIndexMap(MVStore store, String name) {
        if (store.hasMap(name)) {
            store.removeMap(openMap(store, name));
        }
    }

    @SuppressWarnings("unchecked")
    private static <T> DataType<T> cast(DataType<?> type) {
        return (DataType<T>) type;
    }

    /** Copies every map of the old-format store in {@code file} into a new store and puts it in the file's place. */
    private static void convert(String file) throws IOException {
        Path target = Path.of(file);
        Path copy = Path.of(file + ".converting");
        Files.deleteIfExists(copy);
        long documents = 0;
        MVStore old = new MVStore.Builder().fileName(file).readOnly().open();
        MVStore converted = new MVStore.Builder().fileName(copy.toString()).open();
        try {
            for (String name : old.getMapNames()) {
                if (name.contains("._index_")) {
                    continue; // unique indexes are kept in memory now, rebuilt from the documents (UniqueIndex)
                }
                MVMap<Object, Object> from = old.openMap(name);
                MVMap<Object, Object> to = openMap(converted, name);
                for (Map.Entry<Object, Object> entry : from.entrySet()) {
                    to.put(entry.getKey(), entry.getValue());
                }
                if (to.size() != from.size()) {
                    throw new IOException("converting map " + name + ": " + from.size() + " entries read, " + to.size() + " written");
                }
                if (name.startsWith("databases.")) {
                    documents += to.size();
                }
            }
            converted.openMap(FORMAT_MAP).put("format", FORMAT);
            converted.commit();
        } finally {
            converted.close();
            old.close();
        }
        Files.move(copy, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        EmbeddedMongoServer.LOG.info("converted {} documents of {} to BSON storage", documents, file);
    }

    /**
     * How the documents a query returns are copied, by the command that asked (see {@link #detached}).
     */
    enum Copy {
        /** The instances stored: the command does not change them (find; update, see {@code ChangedFieldsUpdate}). */
        NONE,
        /** A new top-level map per document, sharing its values: the library's update changes only that map. */
        TOP_LEVEL,
        /** A deep copy: any other command, whatever it does with what it reads. */
        DEEP;

        /** The copy {@code command} (a command name, in any case) needs. */
        static Copy forCommand(String command) {
            if (command.equalsIgnoreCase("find") || command.equalsIgnoreCase("update")) {
                return NONE;
            }
            if (command.equalsIgnoreCase("findAndModify")) {
                return TOP_LEVEL;
            }
            return DEEP;
        }
    }

    /** What {@code work} returns, with {@code copy} as this thread's copy meanwhile. */
    static <T> T withCopy(Copy copy, java.util.function.Supplier<T> work) {
        Copy before = COPY.get();
        COPY.set(copy);
        try {
            return work.get();
        } finally {
            COPY.set(before);
        }
    }

    /** The copy the command this thread is handling needs ({@link Copy#DEEP} outside a command). */
    static final ThreadLocal<Copy> COPY = ThreadLocal.withInitial(() -> Copy.DEEP);

    /**
     * The documents of a query's first batch, copied as the command handled by this thread needs ({@link #COPY}).
     * The library updates a document by changing the instance its query returned and putting it back; with H2,
     * that instance is the one in the map's page, which the background writer may be encoding at that moment (a
     * {@code ConcurrentModificationException} that closes the store). A findAndModify (and an update the library
     * handles: a replacement, an upsert that inserts) finds its documents through {@code queryDocuments}, and its
     * change (AbstractMongoCollection.updateDocument) removes and puts top-level fields of that instance only, each
     * new value a new object (the new document is built from a deep copy): a new top-level map per document is
     * enough to keep every instance in a page unchanged once stored. A find needs no copy at all, nor does an update
     * of operators ({@code ChangedFieldsUpdate} puts a new document in the old one's place); any other command
     * (aggregate, distinct, …) gets a deep copy, as it may change what it reads.
     */
    static QueryResult detached(QueryResult result) {
        Copy copy = COPY.get();
        if (copy == Copy.NONE) {
            return result;
        }
        List<Document> copies = new ArrayList<>();
        for (Document document : result) {
            copies.add(copy == Copy.TOP_LEVEL ? document.clone() : document.cloneDeeply());
        }
        return new QueryResult(copies, result.getCursorId());
    }

    /** Encodes {@code value} as its BSON type byte and value; {@link Missing} as type 0 (no BSON type has it). */
    private static void encodeValue(Object value, ByteBuf out) {
        if (value instanceof Missing) {
            out.writeByte(0);
            return;
        }
        byte type = BsonEncoder.determineType(value);
        out.writeByte(type);
        BsonEncoder.encodeValue(type, value, out);
    }

    private static Object decodeValue(ByteBuf in) {
        byte type = in.readByte();
        return type == 0 ? Missing.getInstance() : BsonDecoder.decodeValue(type, in);
    }

    /** A scratch buffer per thread for encoding (H2 writes pages from several threads). */
    private static final ThreadLocal<ByteBuf> SCRATCH = ThreadLocal.withInitial(() -> Unpooled.buffer(1024));

    /** Base of the types below: an encoded length, then the bytes of {@link #encode}. */
    private abstract static class EncodedType<T> extends BasicDataType<T> {
        abstract void encode(T value, ByteBuf out);

        abstract T decode(ByteBuf in);

        @Override
        public void write(WriteBuffer buffer, T value) {
            ByteBuf scratch = SCRATCH.get().clear();
            encode(value, scratch);
            int length = scratch.readableBytes();
            buffer.putVarInt(length);
            buffer.put(scratch.array(), scratch.arrayOffset(), length);
        }

        @Override
        public T read(ByteBuffer buffer) {
            int length = DataUtils.readVarInt(buffer);
            int start = buffer.position();
            T value = decode(Unpooled.wrappedBuffer(buffer.slice(start, length)));
            buffer.position(start + length);
            return value;
        }
    }

    /** A collection's document, as a BSON document. */
    private static final class DocumentType extends EncodedType<Document> {
        static final DocumentType INSTANCE = new DocumentType();

        @Override
        void encode(Document value, ByteBuf out) {
            BsonEncoder.encodeDocument(value, out);
        }

        @Override
        Document decode(ByteBuf in) {
            return BsonDecoder.decodeBson(in);
        }

        @Override
        public int getMemory(Document value) {
            return estimateMemory(value);
        }

        @Override
        public Document[] createStorage(int size) {
            return new Document[size];
        }
    }

    /** A position ({@code _id} value or {@link Missing}) or any single value, ordered by {@link ValueComparator}. */
    private static final class ValueType extends EncodedType<Object> {
        static final ValueType INSTANCE = new ValueType();

        @Override
        void encode(Object value, ByteBuf out) {
            encodeValue(value, out);
        }

        @Override
        Object decode(ByteBuf in) {
            return decodeValue(in);
        }

        @Override
        public int getMemory(Object value) {
            return estimateMemory(value);
        }

        @Override
        public int compare(Object a, Object b) {
            return SecondaryIndex.compareValues(a, b);
        }

        @Override
        public Object[] createStorage(int size) {
            return new Object[size];
        }
    }

    /** A unique index's key: its values in the index's field order, compared value by value. */
    private static final class KeyType extends EncodedType<KeyValue> {
        static final KeyType INSTANCE = new KeyType();

        @Override
        void encode(KeyValue key, ByteBuf out) {
            out.writeInt(key.size());
            for (Object value : key) {
                encodeValue(value, out);
            }
        }

        @Override
        KeyValue decode(ByteBuf in) {
            Object[] values = new Object[in.readInt()];
            for (int i = 0; i < values.length; i++) {
                values[i] = decodeValue(in);
            }
            return new KeyValue(values);
        }

        @Override
        public int getMemory(KeyValue key) {
            int memory = 48;
            for (Object value : key) {
                memory += estimateMemory(value);
            }
            return memory;
        }

        @Override
        public int compare(KeyValue a, KeyValue b) {
            int bySize = Integer.compare(a.size(), b.size());
            for (int i = 0; bySize == 0 && i < a.size(); i++) {
                bySize = SecondaryIndex.compareValues(a.get(i), b.get(i));
            }
            return bySize;
        }

        @Override
        public KeyValue[] createStorage(int size) {
            return new KeyValue[size];
        }
    }

    /** A rough size in bytes of a value on the Java heap, for H2's page cache accounting. */
    private static int estimateMemory(Object value) {
        if (value instanceof String text) {
            return 40 + text.length();
        }
        if (value instanceof Map<?, ?> map) {
            int memory = 48;
            for (Map.Entry<?, ?> entry : map.entrySet()) {
                memory += 32 + estimateMemory(entry.getKey()) + estimateMemory(entry.getValue());
            }
            return memory;
        }
        if (value instanceof Collection<?> list) {
            int memory = 40;
            for (Object item : list) {
                memory += 8 + estimateMemory(item);
            }
            return memory;
        }
        if (value instanceof byte[] bytes) {
            return 16 + bytes.length;
        }
        return 24;
    }
}
