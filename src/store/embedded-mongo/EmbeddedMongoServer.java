import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import java.util.stream.Stream;

import org.h2.mvstore.MVMap;
import org.h2.mvstore.MVStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.backend.AbstractCursor;
import de.bwaldvogel.mongo.backend.ArrayFilters;
import de.bwaldvogel.mongo.backend.ChangedFieldsUpdate;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.DatabaseResolver;
import de.bwaldvogel.mongo.backend.DocumentWithPosition;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.QueryResult;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import de.bwaldvogel.mongo.backend.h2.H2Collection;
import de.bwaldvogel.mongo.backend.h2.H2Database;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import de.bwaldvogel.mongo.backend.memory.MemoryCollection;
import de.bwaldvogel.mongo.backend.memory.MemoryDatabase;
import de.bwaldvogel.mongo.bson.BinData;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.MongoServerError;
import de.bwaldvogel.mongo.exception.MongoServerException;
import de.bwaldvogel.mongo.oplog.Oplog;
import de.bwaldvogel.mongo.wire.bson.BsonEncoder;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;

/**
 * The embedded database of `npm start` and `npm test`: mongo-java-server on a loopback port.
 *
 * <p>Arguments: {@code memory} (the memory backend) or {@code h2 <file> <commitIntervalMs>} (the H2 MVStore
 * backend, its file opened here so that the interval of its background commits is ours to set: an
 * acknowledged write reaches the file within that interval, as MongoDB's journal does within 100 ms).
 *
 * <p>It binds 127.0.0.1 on a port of the system's choosing and prints {@code listening <port>} on stdout.
 * It reports MongoDB 5.0 with wire version 13, the oldest the Node driver 7 accepts (the library's own
 * versions report 8 or less). It ends, committing the store, on SIGTERM or SIGINT and when its standard
 * input closes, which happens however its parent process ends (even on SIGKILL): it never outlives it.
 *
 * <p>Two changes to how the library plans queries, the same for both backends ({@link Plan}). It uses an
 * index only when the query's keys are exactly the index's, so an update or count by {@code _id} with any
 * other condition ({@code {_id, status}}, the shape of every conditional state change) read the whole
 * collection: 3 ms per update at 10,000 documents, against 0.7 ms by {@code _id} alone. MongoDB plans such
 * a query by the {@code _id} index; so does this server now. And it ignores every non-unique index, so a
 * query on any other field read the whole collection; those indexes are now kept ({@link SecondaryIndex}), partial
 * ones ({@code partialFilterExpression}) as MongoDB keeps them, which the library kept whole.
 *
 * <p>The H2 backend's storage is {@link BsonStore}'s: documents as BSON, indexes in memory ({@link UniqueIndex},
 * {@link SecondaryIndex}), and query results as copies where the library's own update changes the documents it
 * finds (H2 writes pages in the background: {@link BsonStore#detached}).
 *
 * <p>An update command's statements of operators are applied by {@link ChangedFieldsUpdate}, which copies only the
 * top-level fields an update names where the library copies and compares whole documents several times over.
 *
 * <p>It counts the commands it handles, by the application that sent them ({@link CommandCounts}), for the benchmarks.
 *
 * <p>Find replies come in batches as MongoDB's do: 101 documents first where no batch size is asked for, never
 * more than 16 MiB ({@link #inBatches}).
 *
 * <p>Its log (SLF4J's simple logger on stderr, which the service relays into its own log) carries real errors only
 * ({@link #answering}): a command the client gets an error answer for (an index that is not there, a duplicate key) is
 * the client's to judge, as MongoDB leaves it to its clients, and is not logged here.
 */
public final class EmbeddedMongoServer {

    /** The launcher's own log lines (SLF4J logger {@code embedded-database}; the service relays them). */
    static final Logger LOG = LoggerFactory.getLogger("embedded-database");

    /** MongoDB 5.0 as the Node driver sees it (wire version 13). */
    private static final MongoVersion MONGODB_5_0 = new MongoVersion() {
        @Override
        public List<Integer> getVersionArray() {
            return List.of(5, 0, 0);
        }

        @Override
        public int getWireVersion() {
            return 13;
        }
    };

    private EmbeddedMongoServer() {
    }

    /**
     * A command's answer from {@code handle}, where what fails is logged as MongoDB logs it: an error the client is
     * answered ({@link MongoServerException}: a missing index, a duplicate key, a bad query) is not logged, the
     * client has it; anything else is a fault of this server, logged once at error level with its stack, then
     * answered by the library as "Unknown error". The library's own handler logged every failed command at error
     * level with a Java stack (a fresh start's drops of earlier releases' indexes printed about 150 lines); its
     * logger is off ({@code src/store/embedded-mongo.ts}) and this is where a command's failure is logged instead.
     */
    static Document answering(String command, Supplier<Document> handle) {
        try {
            return handle.get();
        } catch (MongoServerException e) {
            throw e;
        } catch (RuntimeException e) {
            LOG.error("command {} failed", command, e);
            throw e;
        }
    }

    public static void main(String[] args) throws IOException {
        MongoBackend backend = openBackend(args);
        backend.version(MONGODB_5_0);
        MongoServer server = new MongoServer(backend);
        server.bind(new InetSocketAddress("127.0.0.1", 0));
        Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow, "embedded-mongo-shutdown"));
        System.out.println("listening " + server.getLocalAddress().getPort());
        System.out.flush();

        InputStream parent = System.in;
        while (parent.read() != -1) {
            // The parent writes nothing; end of input means it has gone.
        }
        System.exit(0);
    }

    /** The most the documents of one reply take, about: MongoDB's maximum BSON document size, its batches' bound. */
    private static final long MAX_BATCH_BYTES = 16L * 1024 * 1024;

    /** Documents of a find's first batch where no batch size is asked for, as MongoDB answers. */
    private static final int DEFAULT_FIRST_BATCH = 101;

    /**
     * A find command's reply as MongoDB batches it. The library answers a find without a batch size with all its
     * documents in one reply (a 64 MiB GridFS file went whole into one reply, and into the memory of both ends).
     * Here, as in MongoDB, such a first batch has {@link #DEFAULT_FIRST_BATCH} documents at most, and every batch
     * stops before {@link #MAX_BATCH_BYTES} (one document at least); the rest goes to a cursor whose getMore
     * batches are bounded by size the same way (a {@code singleBatch} find gets no cursor). So a query that
     * expects more than 101 documents asks for them ({@code batchSize}) or pays a getMore, on MongoDB and here.
     * Only the find command's reply: the library's own reads (for an update, a delete, a count) take every
     * document. With a batch size, the library's own cursor batches by count.
     */
    private static Document inBatches(String command, Document query, Document reply, CursorRegistry registry) {
        if (!command.equalsIgnoreCase("find") || !(reply.get("cursor") instanceof Document cursor)) {
            return reply;
        }
        if (!(cursor.get("firstBatch") instanceof List<?> batch) || !(cursor.get("id") instanceof Number id) || id.longValue() != 0) {
            return reply;
        }
        @SuppressWarnings("unchecked")
        List<Document> documents = (List<Document>) batch;
        int first = fitting(documents, query.get("batchSize") instanceof Number asked ? asked.intValue() : DEFAULT_FIRST_BATCH);
        if (first == documents.size()) {
            return reply;
        }
        cursor.put("firstBatch", new ArrayList<>(documents.subList(0, first)));
        if (!Boolean.TRUE.equals(query.get("singleBatch"))) {
            BatchedCursor rest = new BatchedCursor(registry.generateCursorId(), new ArrayList<>(documents.subList(first, documents.size())));
            registry.add(rest);
            cursor.put("id", rest.getId());
        }
        return reply;
    }

    /** How many of the first {@code count} documents (all for 0 or less) fit in one batch; one at least. */
    private static int fitting(List<Document> documents, int count) {
        int most = count > 0 ? Math.min(count, documents.size()) : documents.size();
        long bytes = 0;
        int n = 0;
        while (n < most) {
            bytes += approximateSize(documents.get(n));
            if (n > 0 && bytes > MAX_BATCH_BYTES) {
                break;
            }
            n++;
        }
        return n;
    }

    /** About the size of {@code value} in BSON, in bytes, without encoding it (strings counted as one byte a character). */
    private static long approximateSize(Object value) {
        if (value instanceof Map<?, ?> document) {
            long size = 5;
            for (Map.Entry<?, ?> entry : document.entrySet()) {
                size += String.valueOf(entry.getKey()).length() + 2 + approximateSize(entry.getValue());
            }
            return size;
        }
        if (value instanceof Collection<?> values) {
            long size = 5;
            for (Object element : values) {
                size += 4 + approximateSize(element);
            }
            return size;
        }
        if (value instanceof String string) {
            return string.length() + 5L;
        }
        if (value instanceof BinData binary) {
            return binary.getData().length + 5L;
        }
        if (value instanceof byte[] bytes) {
            return bytes.length + 5L;
        }
        return 8;
    }

    /** The rest of a result, handed out by getMore in batches that {@link #fitting} bounds. */
    private static final class BatchedCursor extends AbstractCursor {
        private List<Document> remaining;

        BatchedCursor(long id, List<Document> remaining) {
            super(id);
            this.remaining = remaining;
        }

        @Override
        public boolean isEmpty() {
            return remaining.isEmpty();
        }

        @Override
        public List<Document> takeDocuments(int count) {
            int n = fitting(remaining, count);
            List<Document> batch = remaining.subList(0, n);
            remaining = remaining.subList(n, remaining.size());
            return batch;
        }
    }

    /** How a query reads the collection: these positions, then the library's matching, with this sort. */
    private record Plan<P>(Iterable<P> positions, Document orderBy) {

        /**
         * The plan of a query, or null to leave it to the library. A query with an {@code _id} equality (or an
         * {@code _id} {@code $in}) and other conditions is read by the {@code _id} index, then the whole query is
         * matched on the documents found. Otherwise the first
         * index that can answer it does, as in the library; a {@link SecondaryIndex} whose order is the query's
         * lets the sort go, so that a limit stops the read.
         */
        static <P> Plan<P> of(Document query, Document orderBy, List<Index<P>> indexes) {
            Object id = query.get("_id");
            boolean byIds = id instanceof Document in && in.size() == 1 && in.get("$in") instanceof java.util.Collection;
            if (query.size() >= 2 && id != null && (!(id instanceof Document) || byIds)) {
                Document byId = new Document("_id", id);
                for (Index<P> index : indexes) {
                    if (index.canHandle(byId)) {
                        return new Plan<>(index.getPositions(byId), orderBy);
                    }
                }
            }
            for (Index<P> index : indexes) {
                if (index instanceof SecondaryIndex<P> secondary) {
                    SecondaryIndex<P>.Scan scan = secondary.scan(query, orderBy);
                    if (scan != null) {
                        return new Plan<>(scan.positions(), scan.ordered ? null : orderBy);
                    }
                } else if (index.canHandle(query)) {
                    return null;
                }
            }
            return null;
        }
    }

    /**
     * The size of a collection's documents, BSON-encoded, in bytes, counted when asked (collStats, dbStats,
     * validate). The library keeps a running total instead, encoding every document it inserts, updates (twice:
     * before and after) or deletes to measure it, and with H2 writing the total to the store each time: about a
     * twentieth of the database's CPU under the send benchmark, for a figure the service never reads.
     */
    private static <P> int dataSizeOf(Stream<DocumentWithPosition<P>> documents) {
        ByteBuf buffer = Unpooled.buffer();
        long size = 0;
        for (DocumentWithPosition<P> document : (Iterable<DocumentWithPosition<P>>) documents::iterator) {
            buffer.clear();
            BsonEncoder.encodeDocument(document.getDocument(), buffer);
            size += buffer.readableBytes();
        }
        return (int) Math.min(Integer.MAX_VALUE, size);
    }

    /**
     * The fields a projection leaves out when it only leaves out top-level fields ({@code {send: 0}}), or null for
     * any other projection (or none). The library answers a projection that only excludes with a deep copy of each
     * document it then removes the fields from: under the send benchmark that copy was a twentieth of the database's
     * CPU, for messages read back without their send snapshot. A copy of the top-level map, the same fields removed,
     * is the same answer ({@link #projected}); other projections are the library's.
     */
    private static Set<String> topLevelExclusions(Document fields) {
        if (fields == null || fields.isEmpty()) {
            return null;
        }
        Set<String> excluded = new HashSet<>();
        for (Map.Entry<String, Object> field : fields.entrySet()) {
            String name = field.getKey();
            Object value = field.getValue();
            boolean excludes = Boolean.FALSE.equals(value) || (value instanceof Number number && number.doubleValue() == 0);
            if (!excludes || name.isEmpty() || name.contains(".") || name.startsWith("$")) {
                return null;
            }
            excluded.add(name);
        }
        return excluded;
    }

    /**
     * A query's result under the projection {@code fields}: the library's ({@code match} with the batch size and the
     * projection) unless the projection only leaves out top-level fields ({@link #topLevelExclusions}); then the
     * library's result without projection or batches, each document a new top-level map without those fields that
     * shares every other value, batched by {@code batches} (the collection's {@code createQueryResult}).
     */
    private static QueryResult projected(Document fields, int batchSize, BiFunction<List<Document>, Integer, QueryResult> batches,
                                         BiFunction<Integer, Document, QueryResult> match) {
        Set<String> excluded = topLevelExclusions(fields);
        if (excluded == null) {
            return match.apply(batchSize, fields);
        }
        List<Document> projected = new ArrayList<>();
        for (Document document : match.apply(0, null)) {
            Document copy = document.clone();
            copy.keySet().removeAll(excluded);
            projected.add(copy);
        }
        return batches.apply(projected, batchSize);
    }

    /** The description of the index {@code createIndexes} is adding in this thread ({@link #adding}). */
    private static final ThreadLocal<Document> ADDING = new ThreadLocal<>();

    /**
     * Adds an index ({@code add}, the library's) with its description at hand for {@link #partialFilterOf}: the
     * library hands an index's key and {@code sparse} to the backend, not its {@code partialFilterExpression}.
     *
     * @throws MongoServerError for a partial unique index, which this server does not keep (MongoDB does): the
     *     library would make it unique over every document; for a partial index that is also sparse, which MongoDB
     *     refuses.
     */
    private static void adding(Document description, Runnable add) {
        if (description.containsKey("partialFilterExpression")) {
            if (Boolean.TRUE.equals(description.get("unique"))) {
                throw new MongoServerError(67, "CannotCreateIndex", "the embedded database keeps no partial unique index (" + description.get("name") + ")");
            }
            if (Boolean.TRUE.equals(description.get("sparse"))) {
                throw new MongoServerError(67, "CannotCreateIndex", "cannot mix partialFilterExpression and sparse (" + description.get("name") + ")");
            }
        }
        // Adding an index to a new collection adds its _id index first, through here: the outer description is kept.
        Document outer = ADDING.get();
        ADDING.set(description);
        try {
            add.run();
        } finally {
            ADDING.set(outer);
        }
    }

    /**
     * The {@code partialFilterExpression} of index {@code indexName} of collection {@code namespace}, or null: from
     * the description being added ({@link #adding}), else from the stored descriptions ({@code system.indexes}),
     * which the library reads when it opens the indexes of a database written before.
     *
     * @throws MongoServerError when the filter is not a document.
     */
    private static Document partialFilterOf(Supplier<MongoCollection<?>> descriptions, String namespace, String indexName) {
        Document description = ADDING.get();
        if (description == null) {
            Iterator<Document> stored = descriptions.get().handleQuery(new Document("ns", namespace).append("name", indexName)).iterator();
            description = stored.hasNext() ? stored.next() : new Document();
        }
        Object filter = description.get("partialFilterExpression");
        if (filter != null && !(filter instanceof Document)) {
            throw new MongoServerError(67, "CannotCreateIndex", "partialFilterExpression must be an object");
        }
        return (Document) filter;
    }

    /** The H2 store of the running server, for the collections its databases open. */
    private static MVStore store;

    private static MongoBackend openBackend(String[] args) throws IOException {
        if (args.length == 1 && args[0].equals("memory")) {
            return new MemoryBackend() {
                @Override
                public Document handleCommand(Channel channel, String databaseName, String command, Document query) {
                    return answering(command, () -> CommandCounts.handle(channel, command, query, () -> super.handleCommand(channel, databaseName, command, query)));
                }

                @Override
                public MemoryDatabase openOrCreateDatabase(String databaseName) {
                    return new MemoryDatabase(databaseName, getCursorRegistry()) {
                        @Override
                        public Document handleCommand(Channel channel, String command, Document query, DatabaseResolver resolver, Oplog oplog) {
                            Document counted = IndexCounts.answer(command, query, name -> resolveCollection(name, false), this::getFullCollectionNamespace);
                            return counted != null ? counted : inBatches(command, query, AggregateInput.answering(command, query, name -> resolveCollection(name, false),
                                () -> super.handleCommand(channel, command, query, resolver, oplog)), cursorRegistry);
                        }

                        @Override
                        protected void addIndex(Document indexDescription) {
                            adding(indexDescription, () -> super.addIndex(indexDescription));
                        }

                        @Override
                        protected Index<Integer> openOrCreateSecondaryIndex(String collectionName, String indexName, List<IndexKey> keys, boolean sparse) {
                            return new SecondaryIndex<>(indexName, keys, sparse, partialFilterOf(this::getOrCreateIndexesCollection, getFullCollectionNamespace(collectionName), indexName));
                        }

                        @Override
                        protected MemoryCollection openOrCreateCollection(String collectionName, CollectionOptions options) {
                            return new MemoryCollection(this, collectionName, options, cursorRegistry) {
                                @Override
                                protected boolean tracksDataSize() {
                                    return false;
                                }

                                @Override
                                protected int getDataSize() {
                                    return dataSizeOf(streamAllDocumentsWithPosition());
                                }

                                @Override
                                public Stream<Document> queryAllAsStream() {
                                    return AggregateInput.read(this, super::queryAllAsStream);
                                }

                                @Override
                                protected QueryResult queryDocuments(Document query, Document orderBy, int skip, int limit, int batchSize, Document fields) {
                                    Plan<Integer> plan = Plan.of(query, orderBy, getIndexes());
                                    return plan == null
                                        ? super.queryDocuments(query, orderBy, skip, limit, batchSize, fields)
                                        : matchDocuments(query, plan.positions(), plan.orderBy(), skip, limit, batchSize, fields);
                                }

                                @Override
                                protected QueryResult matchDocumentsFromStream(Document query, Stream<Document> documents, int skip, int limit, int batchSize,
                                                                               Comparator<Document> order, Document fields) {
                                    return projected(fields, batchSize, this::createQueryResult,
                                        (size, projection) -> super.matchDocumentsFromStream(query, documents, skip, limit, size, order, projection));
                                }

                                @Override
                                public synchronized Document updateDocuments(Document selector, Document update, ArrayFilters arrayFilters,
                                                                             boolean multi, boolean upsert, Oplog oplog) {
                                    Document result = ChangedFieldsUpdate.update(this, selector, update, arrayFilters, multi, upsert, oplog,
                                        ChangedFieldsUpdate.Storage.IN_PLACE);
                                    return result != null ? result : super.updateDocuments(selector, update, arrayFilters, multi, upsert, oplog);
                                }
                            };
                        }
                    };
                }
            };
        }
        if (args.length == 3 && args[0].equals("h2")) {
            store = BsonStore.open(args[1], Integer.parseInt(args[2]));
            return new H2Backend(store) {
                @Override
                public Document handleCommand(Channel channel, String databaseName, String command, Document query) {
                    return answering(command, () -> CommandCounts.handle(channel, command, query, () -> super.handleCommand(channel, databaseName, command, query)));
                }

                @Override
                protected MongoDatabase openOrCreateDatabase(String databaseName) {
                    return new H2Database(databaseName, store, getCursorRegistry()) {
                        @Override
                        public Document handleCommand(Channel channel, String command, Document query, DatabaseResolver resolver, Oplog oplog) {
                            Document counted = IndexCounts.answer(command, query, name -> resolveCollection(name, false), this::getFullCollectionNamespace);
                            if (counted != null) {
                                return counted;
                            }
                            BsonStore.COPY.set(BsonStore.Copy.forCommand(command));
                            try {
                                return inBatches(command, query, AggregateInput.answering(command, query, name -> resolveCollection(name, false),
                                    () -> super.handleCommand(channel, command, query, resolver, oplog)), cursorRegistry);
                            } finally {
                                BsonStore.COPY.remove();
                            }
                        }

                        @Override
                        protected void addIndex(Document indexDescription) {
                            adding(indexDescription, () -> super.addIndex(indexDescription));
                        }

                        @Override
                        protected Index<Object> openOrCreateSecondaryIndex(String collectionName, String indexName, List<IndexKey> keys, boolean sparse) {
                            return new SecondaryIndex<>(indexName, keys, sparse, partialFilterOf(this::getOrCreateIndexesCollection, getFullCollectionNamespace(collectionName), indexName));
                        }

                        @Override
                        protected Index<Object> openOrCreateUniqueIndex(String collectionName, String indexName, List<IndexKey> keys, boolean sparse) {
                            // In memory; the map a store written before kept this index in would be left stale, so it goes.
                            BsonStore.removeIndexMap(store, getFullCollectionNamespace(collectionName) + "._index_" + indexName);
                            return new UniqueIndex<>(indexName, keys, sparse);
                        }

                        @Override
                        protected MongoCollection<Object> openOrCreateCollection(String collectionName, CollectionOptions options) {
                            // The map names H2Database gives a collection's documents and its metadata.
                            String namespace = getFullCollectionNamespace(collectionName);
                            MVMap<Object, Document> data = BsonStore.openMap(store, "databases." + namespace);
                            MVMap<String, Object> meta = BsonStore.openMap(store, "meta." + namespace);
                            return new H2Collection(this, collectionName, options, data, meta, cursorRegistry) {
                                @Override
                                protected boolean tracksDataSize() {
                                    return false;
                                }

                                @Override
                                protected int getDataSize() {
                                    return dataSizeOf(streamAllDocumentsWithPosition());
                                }

                                @Override
                                public Stream<Document> queryAllAsStream() {
                                    return AggregateInput.read(this, super::queryAllAsStream);
                                }

                                @Override
                                protected QueryResult queryDocuments(Document query, Document orderBy, int skip, int limit, int batchSize, Document fields) {
                                    Plan<Object> plan = Plan.of(query, orderBy, getIndexes());
                                    return BsonStore.detached(plan == null
                                        ? super.queryDocuments(query, orderBy, skip, limit, batchSize, fields)
                                        : matchDocuments(query, plan.positions(), plan.orderBy(), skip, limit, batchSize, fields));
                                }

                                @Override
                                protected QueryResult matchDocumentsFromStream(Document query, Stream<Document> documents, int skip, int limit, int batchSize,
                                                                               Comparator<Document> order, Document fields) {
                                    return projected(fields, batchSize, this::createQueryResult,
                                        (size, projection) -> super.matchDocumentsFromStream(query, documents, skip, limit, size, order, projection));
                                }

                                @Override
                                public synchronized Document updateDocuments(Document selector, Document update, ArrayFilters arrayFilters,
                                                                             boolean multi, boolean upsert, Oplog oplog) {
                                    Document result = ChangedFieldsUpdate.update(this, selector, update, arrayFilters, multi, upsert, oplog,
                                        ChangedFieldsUpdate.Storage.REPLACED);
                                    if (result != null) {
                                        return result;
                                    }
                                    // The library's own update changes the instances it finds: they must be copies.
                                    return BsonStore.withCopy(BsonStore.Copy.TOP_LEVEL,
                                        () -> super.updateDocuments(selector, update, arrayFilters, multi, upsert, oplog));
                                }
                            };
                        }
                    };
                }
            };
        }
        System.err.println("usage: EmbeddedMongoServer memory | h2 <file> <commitIntervalMs>");
        System.exit(2);
        return null;
    }
}
