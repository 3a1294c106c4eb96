import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.stream.Stream;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.backend.DefaultQueryMatcher;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.KeyValue;
import de.bwaldvogel.mongo.backend.Missing;
import de.bwaldvogel.mongo.backend.ValueComparator;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.bson.ObjectId;
import de.bwaldvogel.mongo.exception.MongoServerError;

/**
 * A non-unique index ({@code createIndex} without {@code unique}), which the library accepts and ignores
 * (every query on such fields reads the whole collection). Kept in memory, ordered by the index's keys (each in
 * its direction) and then by {@code _id}; rebuilt from the documents when the collection opens (the library
 * fills an empty index it adds), so it is never out of step with them.
 *
 * <p>It answers a query that has equality ({@code v} or {@code {$eq: v}}) on its leading keys and then,
 * optionally, a range ({@code $gt}, {@code $gte}, {@code $lt}, {@code $lte}) on the next one, or an {@code $in}
 * of values on one key after the equalities. Values must be numbers, strings, dates, booleans or ObjectIds; any
 * other shape is left to a full scan. The positions it gives are a superset of the answer: the library still
 * matches the whole query on every document (so a range on dates passes no string or null through).
 *
 * <p>When the query's order is the index's order (the keys after the equalities, all in the index's directions
 * or all reversed, {@code _id} last), {@link #scan} says so, and the planner drops the sort: the positions are
 * read lazily in order and a {@code limit} stops the read, as MongoDB's index scan does.
 */
final class SecondaryIndex<P> extends Index<P> {

    /** A position in the index: a document's keys and {@code _id}, or a bound before or after a prefix of keys. */
    private record Entry(Object[] key, Object id, int bound) {
    }

    private static final int BEFORE = -1;
    private static final int AFTER = 1;

    /** Each key's direction: 1 ascending, -1 descending. */
    private final int[] directions;
    private final ConcurrentSkipListMap<Entry, P> entries = new ConcurrentSkipListMap<>(this::compare);
    private final ConcurrentHashMap<Object, P> positionsById = new ConcurrentHashMap<>();

    /** Each key's path, split at its dots once (read directly, see {@link #keysOf}). */
    private final String[][] paths;
    /** What {@link #valueAt} answers for a path through an array: the library's general path applies. */
    private static final Object THROUGH_ARRAY = new Object();

    /** The {@code partialFilterExpression}: only the documents it matches have entries; null: every document. */
    private final Document partialFilter;
    /** The filter's conditions, its top-level {@code $and} flattened: field → condition. */
    private final Map<String, Object> filterConditions;
    /** The paths of the filter's conditions, in their order, split at the dots. */
    private final String[][] filterPaths;
    /** The paths an update must leave alone for the entries to stay as they are: the keys' and the filter's. */
    private final String[][] watched;
    /**
     * Set once a document has had an array at one of the keys (MongoDB's "multikey" index): its entries are then not
     * one per document, so {@link #count} leaves its queries to the documents.
     */
    private volatile boolean multikey;
    /** The entries again, ranked for {@link #count}: made by the first count, then kept with the entries (under the lock). */
    private Ranks<Entry> ranks;

    /**
     * @param partialFilter the index's {@code partialFilterExpression}, or null. As in MongoDB, only the documents it
     *     matches have entries, and the index answers only the queries that imply it; here, those that hold each of
     *     its conditions as written (the same field with an equal condition), which MongoDB's planner implies too.
     * @throws MongoServerError when the filter is not a document of field conditions (optionally under {@code $and}),
     *     has two conditions on one field, or {@code $exists: false} (MongoDB takes {@code $exists: true} only).
     */
    SecondaryIndex(String name, List<IndexKey> keys, boolean sparse, Document partialFilter) {
        super(name, keys, sparse);
        directions = keys.stream().mapToInt(key -> key.isAscending() ? 1 : -1).toArray();
        paths = keys.stream().map(key -> key.getKey().split("\\.", -1)).toArray(String[][]::new);
        this.partialFilter = partialFilter;
        filterConditions = partialFilter == null ? Map.of() : conditionsOf(partialFilter);
        filterPaths = filterConditions.keySet().stream().map(field -> field.split("\\.", -1)).toArray(String[][]::new);
        watched = Stream.concat(Arrays.stream(paths), Arrays.stream(filterPaths)).toArray(String[][]::new);
    }

    /** A filter's conditions by field, the clauses of a top-level {@code $and} included. */
    private static Map<String, Object> conditionsOf(Document filter) {
        Map<String, Object> conditions = new LinkedHashMap<>();
        addConditions(filter, conditions);
        return conditions;
    }

    private static void addConditions(Document filter, Map<String, Object> conditions) {
        for (Map.Entry<String, Object> entry : filter.entrySet()) {
            if (entry.getKey().equals("$and") && entry.getValue() instanceof List<?> clauses) {
                for (Object clause : clauses) {
                    if (!(clause instanceof Document document)) {
                        throw new MongoServerError(67, "CannotCreateIndex", "partialFilterExpression: each $and clause must be an object");
                    }
                    addConditions(document, conditions);
                }
            } else if (entry.getKey().startsWith("$")) {
                throw new MongoServerError(67, "CannotCreateIndex",
                    "partialFilterExpression: " + entry.getKey() + " is not supported (field conditions and a top-level $and are)");
            } else if (conditions.containsKey(entry.getKey())) {
                // One condition per field: the index is used by the queries that hold each as written.
                throw new MongoServerError(67, "CannotCreateIndex", "partialFilterExpression: " + entry.getKey() + " has more than one condition");
            } else if (entry.getValue() instanceof Document condition && Boolean.FALSE.equals(condition.get("$exists"))) {
                throw new MongoServerError(67, "CannotCreateIndex", "partialFilterExpression: " + entry.getKey() + ": $exists: false is not supported (MongoDB takes $exists: true only)");
            } else {
                conditions.put(entry.getKey(), entry.getValue());
            }
        }
    }

    /**
     * Whether the partial filter matches {@code document}, as the library's matcher says. The usual conditions (a
     * plain value, {@code $exists}) are read directly, on every write of a document: the matcher checks and splits
     * each path anew. Any other condition, or an array where a value is compared, is left to the matcher.
     */
    private boolean inFilter(Document document) {
        int i = 0;
        for (Object condition : filterConditions.values()) {
            Object stored = valueOrElement(document, filterPaths[i++]);
            Boolean exists = condition instanceof Document d && d.size() == 1 && d.get("$exists") instanceof Boolean b ? b : null;
            if (exists != null && stored != THROUGH_ARRAY) {
                if (!(stored instanceof Missing) != exists) {
                    return false;
                }
            } else if (scalar(condition) != null && !(stored instanceof Collection) && stored != THROUGH_ARRAY) {
                if (stored instanceof Missing || !Objects.equals(scalar(stored), scalar(condition))) {
                    return false;
                }
            } else {
                return new DefaultQueryMatcher().matches(document, partialFilter);
            }
        }
        return true;
    }

    /**
     * The value at {@code path}, a numeric step taking an array's element ({@code events_pending.0}): {@link Missing}
     * when a step finds nothing, {@link #THROUGH_ARRAY} when any other step meets an array.
     */
    private static Object valueOrElement(Document document, String[] path) {
        Object value = document;
        for (String step : path) {
            if (value instanceof Document subdocument) {
                value = subdocument.getOrMissing(step);
            } else if (value instanceof List<?> list && !step.isEmpty() && step.chars().allMatch(Character::isDigit)) {
                int index = step.length() > 9 ? Integer.MAX_VALUE : Integer.parseInt(step);
                value = index < list.size() ? list.get(index) : Missing.getInstance();
            } else if (value instanceof Collection) {
                return THROUGH_ARRAY;
            } else {
                return Missing.getInstance();
            }
        }
        return value;
    }

    /** True when {@code query} holds every condition of the partial filter as written (always, without a filter). */
    private boolean impliedBy(Document query) {
        for (Map.Entry<String, Object> condition : filterConditions.entrySet()) {
            Object asked = query.get(condition.getKey());
            if (asked == null || !Objects.equals(asked, condition.getValue())) {
                return false;
            }
        }
        return true;
    }

    /**
     * True for a partial index too: the library, removing a document, expects every index to know it unless the
     * index is sparse; a partial index has no entry for the documents its filter leaves out either.
     */
    @Override
    protected boolean isSparse() {
        return super.isSparse() || partialFilter != null;
    }

    @Override
    public boolean hasSameOptions(Index<?> other) {
        return super.hasSameOptions(other) && Objects.equals(partialFilter, other instanceof SecondaryIndex<?> secondary ? secondary.partialFilter : null);
    }

    /**
     * The value at {@code path} in {@code document} as the library reads it ({@link Missing} when a step is not a
     * subdocument), or {@link #THROUGH_ARRAY} when an array is on the way or at its end.
     */
    private static Object valueAt(Document document, String[] path) {
        Object value = storedAt(document, path);
        return value instanceof Collection ? THROUGH_ARRAY : value;
    }

    /**
     * The document's entries' keys, as the library's {@code getKeyValues} gives them (normalized values, one key
     * per distinct element of an indexed array, in the array's order). Read directly where the library's general
     * path splits every key with a regular expression and streams, on every write: documents without arrays, and
     * documents whose one array is a key's whole value, of elements that are neither documents nor arrays (a
     * multikey index as {@code events_pending}). Anything else (an array on a key's way, elements that are
     * documents or arrays, several arrays) takes the library's path.
     */
    private List<Object[]> keysOf(Document document) {
        List<Object> values = new ArrayList<>(paths.length);
        int arrayAt = -1;
        for (int i = 0; i < paths.length; i++) {
            Object value = valueAt(document, paths[i]);
            if (value == THROUGH_ARRAY) {
                Collection<?> elements = arrayAtEnd(document, paths[i]);
                multikey = true;
                if (arrayAt >= 0 || elements == null || !allScalar(elements)) {
                    return libraryKeysOf(document);
                }
                arrayAt = i;
                value = elements;
            }
            values.add(value);
        }
        if (arrayAt < 0) {
            return List.<Object[]>of(new KeyValue(values).normalized().stream().toArray());
        }
        Set<KeyValue> keys = new LinkedHashSet<>();
        for (Object element : (Collection<?>) values.get(arrayAt)) {
            List<Object> one = new ArrayList<>(values);
            one.set(arrayAt, element);
            keys.add(new KeyValue(one).normalized());
        }
        List<Object[]> all = new ArrayList<>(keys.size());
        for (KeyValue key : keys) {
            all.add(key.stream().toArray());
        }
        return all;
    }

    /** The library's keys of the document ({@link Index#getKeyValues}), as arrays. */
    private List<Object[]> libraryKeysOf(Document document) {
        multikey = true;
        List<Object[]> all = new ArrayList<>();
        for (KeyValue key : getKeyValues(document)) {
            all.add(key.stream().toArray());
        }
        return all;
    }

    /** The array that is the whole value at {@code path}, or null when there is none or one lies on the way. */
    private static Collection<?> arrayAtEnd(Document document, String[] path) {
        Object value = document;
        for (String step : path) {
            if (!(value instanceof Document subdocument)) {
                return null;
            }
            value = subdocument.getOrMissing(step);
        }
        return value instanceof Collection<?> elements ? elements : null;
    }

    /** True when no element is a document or an array (the library would then go into it). */
    private static boolean allScalar(Collection<?> elements) {
        for (Object element : elements) {
            if (element instanceof Map || element instanceof Collection) {
                return false;
            }
        }
        return true;
    }

    /**
     * Whether every key path in {@code paths} (each split at its dots) holds an equal value in both documents, as
     * stored (an array compared element by element, numbers of different types as different): then an index on
     * them has the same keys for both, without working them out. Most updates change no indexed field of most
     * indexes. Used by {@link UniqueIndex} too.
     */
    static boolean untouched(Document a, Document b, String[][] paths) {
        for (String[] path : paths) {
            if (!Objects.equals(storedAt(a, path), storedAt(b, path))) {
                return false;
            }
        }
        return true;
    }

    /** What is stored at {@code path}: the value, the first array on the way, or {@link Missing}. */
    private static Object storedAt(Document document, String[] path) {
        Object value = document;
        for (String step : path) {
            if (!(value instanceof Document subdocument)) {
                return value instanceof Collection ? value : Missing.getInstance();
            }
            value = subdocument.getOrMissing(step);
        }
        return value;
    }

    private static boolean sameKeys(List<Object[]> keysOfA, List<Object[]> keysOfB) {
        if (keysOfA.size() != keysOfB.size()) {
            return false;
        }
        for (int i = 0; i < keysOfA.size(); i++) {
            if (!Arrays.equals(keysOfA.get(i), keysOfB.get(i))) {
                return false;
            }
        }
        return true;
    }

    private int compare(Entry a, Entry b) {
        int common = Math.min(a.key.length, b.key.length);
        for (int i = 0; i < common; i++) {
            int c = directions[i] * compareValues(a.key[i], b.key[i]);
            if (c != 0) {
                return c;
            }
        }
        if (a.bound == 0 && b.bound == 0) {
            return compareValues(a.id, b.id);
        }
        if (b.bound == 0) {
            return a.bound;
        }
        if (a.bound == 0) {
            return -b.bound;
        }
        if (a.bound != b.bound) {
            return Integer.compare(a.bound, b.bound);
        }
        // Two bounds on the same side: the shorter prefix reaches further.
        return a.bound * Integer.compare(b.key.length, a.key.length);
    }

    /**
     * MongoDB's order of two values, as the library's {@link ValueComparator#asc()} gives it, with the
     * comparisons of the usual keys (two strings, two dates, two ObjectIds) made directly: the library's
     * general path checks types and nulls on each of the many comparisons an index write makes.
     */
    static int compareValues(Object a, Object b) {
        if (a instanceof String x && b instanceof String y) {
            return x.compareTo(y);
        }
        if (a instanceof Instant x && b instanceof Instant y) {
            return x.compareTo(y);
        }
        if (a instanceof ObjectId x && b instanceof ObjectId y) {
            return x.compareTo(y);
        }
        return ValueComparator.asc().compare(a, b);
    }

    private static Object idOf(Document document) {
        return new KeyValue(document.get("_id")).normalized().get(0);
    }

    /** True when the document has no entries: a sparse index's document without any of its keys, or one the partial filter does not match. */
    private boolean skips(Document document) {
        if (partialFilter != null && !inFilter(document)) {
            return true;
        }
        if (!super.isSparse()) {
            return false;
        }
        for (String[] path : paths) {
            if (!(valueAt(document, path) instanceof Missing)) {
                return false;
            }
        }
        return true;
    }

    @Override
    public synchronized void add(Document document, P position, MongoCollection<P> collection) {
        if (skips(document)) {
            return;
        }
        addKeys(idOf(document), keysOf(document), position);
    }

    private void addKeys(Object id, List<Object[]> keys, P position) {
        for (Object[] key : keys) {
            putEntry(new Entry(key, id, 0), position);
        }
        positionsById.put(id, position);
    }

    private void putEntry(Entry entry, P position) {
        if (entries.put(entry, position) == null && ranks != null) {
            ranks.add(entry);
        }
    }

    private void removeEntry(Entry entry) {
        if (entries.remove(entry) != null && ranks != null) {
            ranks.remove(entry);
        }
    }

    @Override
    public synchronized P remove(Document document) {
        return removeKeys(idOf(document), keysOf(document));
    }

    private P removeKeys(Object id, List<Object[]> keys) {
        P position = positionsById.remove(id);
        if (position != null) {
            for (Object[] key : keys) {
                removeEntry(new Entry(key, id, 0));
            }
        }
        return position;
    }

    @Override
    public synchronized void updateInPlace(Document oldDocument, Document newDocument, P position, MongoCollection<P> collection) {
        if (untouched(oldDocument, newDocument, watched)) {
            return;
        }
        boolean skippedBefore = skips(oldDocument);
        boolean skippedAfter = skips(newDocument);
        if (skippedBefore && skippedAfter) {
            return; // out of a sparse or partial index before and after
        }
        Object id = idOf(newDocument); // an update never changes _id
        if (skippedBefore) {
            addKeys(id, keysOf(newDocument), position);
            return;
        }
        List<Object[]> oldKeys = keysOf(oldDocument);
        if (skippedAfter) {
            removeKeys(id, oldKeys);
            return;
        }
        List<Object[]> newKeys = keysOf(newDocument);
        if (sameKeys(oldKeys, newKeys)) {
            return;
        }
        // The document stays at its position: only its entries move.
        for (Object[] key : oldKeys) {
            removeEntry(new Entry(key, id, 0));
        }
        for (Object[] key : newKeys) {
            putEntry(new Entry(key, id, 0), position);
        }
    }

    @Override
    public P getPosition(Document document) {
        // Not a unique index: it never names the one position of a document.
        return null;
    }

    @Override
    public void checkAdd(Document document, MongoCollection<P> collection) {
        // Not unique: nothing to refuse.
    }

    @Override
    public void checkUpdate(Document oldDocument, Document newDocument, MongoCollection<P> collection) {
        // Not unique: nothing to refuse.
    }

    @Override
    public long getCount() {
        return entries.size();
    }

    @Override
    public long getDataSize() {
        return 0;
    }

    @Override
    public synchronized void drop() {
        entries.clear();
        positionsById.clear();
        ranks = null;
    }

    @Override
    public boolean canHandle(Document query) {
        return scan(query, null) != null;
    }

    @Override
    public Iterable<P> getPositions(Document query) {
        return scan(query, null).positions();
    }

    /**
     * How this index answers {@code query}: its ranges of entries and whether they come in {@code orderBy}'s
     * order ({@link Scan#ordered}); null when it cannot answer the query.
     */
    Scan scan(Document query, Document orderBy) {
        if (!impliedBy(query)) {
            return null;
        }
        List<String> keys = keys();
        List<Object> prefix = new ArrayList<>();
        int i = 0;
        for (; i < keys.size() && query.containsKey(keys.get(i)); i++) {
            Object value = equality(query.get(keys.get(i)));
            if (value == null) {
                break;
            }
            prefix.add(value);
        }
        List<NavigableMap<Entry, P>> ranges = new ArrayList<>();
        Object condition = i < keys.size() ? query.get(keys.get(i)) : null;
        List<Object> in = condition instanceof Document d && d.size() == 1 ? values(d.get("$in")) : null;
        if (in != null) {
            for (Object value : in) {
                List<Object> exact = new ArrayList<>(prefix);
                exact.add(value);
                ranges.add(range(exact, BEFORE, exact, AFTER));
            }
            return new Scan(ranges, false, false);
        }
        Bounds bounds = condition instanceof Document d ? bounds(d) : null;
        if (prefix.isEmpty() && bounds == null) {
            return null;
        }
        if (bounds == null) {
            ranges.add(range(prefix, BEFORE, prefix, AFTER));
        } else {
            // Bounds are in value order; the map's order is the key's direction.
            List<Object> low = new ArrayList<>(prefix);
            low.add(bounds.low());
            List<Object> high = new ArrayList<>(prefix);
            if (bounds.high() != null) {
                high.add(bounds.high());
            }
            int lowSide = bounds.lowInclusive() ? BEFORE : AFTER;
            int highSide = bounds.high() == null || bounds.highInclusive() ? AFTER : BEFORE;
            ranges.add(getKeys().get(i).isAscending() ? range(low, lowSide, high, highSide) : range(high, -highSide, low, -lowSide));
        }
        return new Scan(ranges, false, false).orderedBy(orderBy, keys, getKeys(), prefix.size());
    }

    /**
     * The documents that match {@code query}, counted from the entries alone by the value of key {@code groupKey}
     * (null: one count, under the key null), as MongoDB counts from an index without reading a document (a
     * {@code COUNT_SCAN}, or a {@code $group} covered by the index); null when the entries cannot give the exact
     * answer, and the query is left to the documents. They can when:
     * <ul>
     * <li>no document has had an array at a key ({@link #multikey}: one entry per document);
     * <li>each field of the query is an equality on a leading key, then at most one {@code $in} or range on the next
     * key ({@link #scan}'s shapes), or a condition of the partial filter held as written; a sparse index needs at
     * least one of them (a document without the keys has no entry);
     * <li>{@code groupKey}, if any, is one of those equality keys or the key right after them, and its values are
     * strings, booleans, dates, ObjectIds or missing (numbers and documents come back from the entries normalized,
     * not as stored).
     * </ul>
     * A range is bounded within its values' type at both ends (MongoDB compares within a type), so every entry
     * between its bounds matches. Counted by {@link #ranks} in O(log n) a range, and for a grouping, a range per
     * group value; read under the index's lock, so the counts are of one state of the index (a document an update
     * moves is counted once, where it was or where it is).
     *
     * @return the count of each group value that has documents (a missing key's group under null)
     */
    synchronized Map<Object, Long> count(Document query, String groupKey) {
        List<String> keys = keys();
        int group = groupKey == null ? -1 : keys.indexOf(groupKey);
        if (multikey || (groupKey != null && group < 0) || !impliedBy(query)) {
            return null;
        }
        List<Object> prefix = new ArrayList<>();
        int used = 0;
        for (; used < keys.size() && query.containsKey(keys.get(used)); used++) {
            Object value = equality(query.get(keys.get(used)));
            if (value == null) {
                break;
            }
            prefix.add(value);
        }
        if (group > prefix.size()) {
            return null;
        }
        // Each range as its first and last bound, in the map's order.
        List<Entry[]> ranges = new ArrayList<>();
        Object condition = used < keys.size() ? query.get(keys.get(used)) : null;
        if (condition == null) {
            ranges.add(bounds(prefix, BEFORE, prefix, AFTER));
        } else {
            List<Object> in = condition instanceof Document d && d.size() == 1 ? values(d.get("$in")) : null;
            Bounds bounds = in == null && condition instanceof Document d ? bounds(d) : null;
            if (in != null) {
                Set<Object> distinct = new java.util.TreeSet<>(SecondaryIndex::compareValues);
                distinct.addAll(in);
                for (Object value : distinct) {
                    List<Object> exact = new ArrayList<>(prefix);
                    exact.add(value);
                    ranges.add(bounds(exact, BEFORE, exact, AFTER));
                }
            } else if (bounds != null) {
                List<Object> low = new ArrayList<>(prefix);
                low.add(bounds.low());
                List<Object> high = new ArrayList<>(prefix);
                // Strings have no greatest value: an empty document is the least of the next type.
                high.add(bounds.high() != null ? bounds.high() : new Document());
                int lowSide = bounds.lowInclusive() ? BEFORE : AFTER;
                int highSide = bounds.high() != null && bounds.highInclusive() ? AFTER : BEFORE;
                ranges.add(getKeys().get(used).isAscending() ? bounds(low, lowSide, high, highSide) : bounds(high, -highSide, low, -lowSide));
            } else {
                return null;
            }
            used++;
        }
        Set<String> answered = new HashSet<>(keys.subList(0, used));
        answered.addAll(filterConditions.keySet());
        if (!answered.containsAll(query.keySet()) || (super.isSparse() && used == 0)) {
            return null;
        }
        if (ranks == null) {
            ranks = new Ranks<>(this::compare);
            entries.keySet().forEach(ranks::add);
        }
        Map<Object, Long> counts = new java.util.HashMap<>();
        for (Entry[] range : ranges) {
            if (group < prefix.size()) {
                long n = ranks.between(range[0], range[1]);
                if (n > 0 && !counted(counts, group < 0 ? null : prefix.get(group), n)) {
                    return null;
                }
                continue;
            }
            // Grouped by the key after the equalities: one range of entries for each of its values.
            for (Entry from = range[0]; ; ) {
                Entry next = entries.ceilingKey(from);
                if (next == null || compare(next, range[1]) > 0) {
                    break;
                }
                List<Object> exact = new ArrayList<>(prefix);
                exact.add(next.key[group]);
                Entry[] run = bounds(exact, BEFORE, exact, AFTER);
                if (!counted(counts, next.key[group], ranks.between(run[0], run[1]))) {
                    return null;
                }
                from = run[1];
            }
        }
        return counts;
    }

    /** Adds {@code n} to the group {@code value}; false when the value is not one {@link #count} gives back as stored. */
    private static boolean counted(Map<Object, Long> counts, Object value, long n) {
        Object stored = value instanceof Missing ? null : value;
        if (!(stored == null || stored instanceof String || stored instanceof Boolean || stored instanceof Instant || stored instanceof ObjectId)) {
            return false;
        }
        counts.merge(stored, n, Long::sum);
        return true;
    }

    private static Entry[] bounds(List<Object> from, int fromSide, List<Object> to, int toSide) {
        return new Entry[] {new Entry(from.toArray(), null, fromSide), new Entry(to.toArray(), null, toSide)};
    }

    private NavigableMap<Entry, P> range(List<Object> from, int fromSide, List<Object> to, int toSide) {
        Entry start = new Entry(from.toArray(), null, fromSide);
        Entry end = new Entry(to.toArray(), null, toSide);
        if (compare(start, end) > 0) {
            return new ConcurrentSkipListMap<>(this::compare);
        }
        return entries.subMap(start, true, end, true);
    }

    /** The value of an equality condition ({@code v} or {@code {$eq: v}}), normalized; null when it is not one. */
    private static Object equality(Object condition) {
        if (condition instanceof Document d) {
            return d.size() == 1 && d.containsKey("$eq") ? scalar(d.get("$eq")) : null;
        }
        return scalar(condition);
    }

    /** The values of an {@code $in}, normalized; null unless every one is a plain scalar. */
    private static List<Object> values(Object list) {
        if (!(list instanceof Collection<?> collection) || collection.isEmpty()) {
            return null;
        }
        List<Object> values = new ArrayList<>();
        for (Object value : collection) {
            Object scalar = scalar(value);
            if (scalar == null) {
                return null;
            }
            values.add(scalar);
        }
        return values;
    }

    /** A range of values of one key; {@code high} null: no upper end. */
    private record Bounds(Object low, boolean lowInclusive, Object high, boolean highInclusive) {
    }

    /**
     * The bounds of a range condition, completed to the type's ends when one side is open (MongoDB compares
     * within a type); null when the condition is not a range of numbers, strings or dates.
     */
    private static Bounds bounds(Document condition) {
        Object low = null;
        Object high = null;
        boolean lowInclusive = true;
        boolean highInclusive = true;
        for (String operator : condition.keySet()) {
            Object value = scalar(condition.get(operator));
            if (!(value instanceof Number || value instanceof String || value instanceof Instant)) {
                return null;
            }
            switch (operator) {
                case "$gt", "$gte" -> {
                    low = value;
                    lowInclusive = operator.equals("$gte");
                }
                case "$lt", "$lte" -> {
                    high = value;
                    highInclusive = operator.equals("$lte");
                }
                default -> {
                    return null;
                }
            }
        }
        if (low != null && high != null && !sameType(low, high)) {
            return null;
        }
        Object typed = low != null ? low : high;
        if (low == null) {
            low = typed instanceof Number ? Double.NEGATIVE_INFINITY : typed instanceof String ? "" : Instant.MIN;
        }
        if (high == null && !(typed instanceof String)) {
            high = typed instanceof Number ? Double.POSITIVE_INFINITY : Instant.MAX;
        }
        return new Bounds(low, lowInclusive, high, highInclusive);
    }

    private static boolean sameType(Object a, Object b) {
        return (a instanceof Number && b instanceof Number) || a.getClass() == b.getClass();
    }

    /** A plain value an index entry can equal, normalized as the library normalizes keys; null otherwise. */
    private static Object scalar(Object value) {
        if (value instanceof Number || value instanceof String || value instanceof Instant || value instanceof Boolean
            || value instanceof de.bwaldvogel.mongo.bson.ObjectId) {
            return new KeyValue(value).normalized().get(0);
        }
        return null;
    }

    /** The entries that may answer a query, in index order within each range. */
    final class Scan {
        private final List<NavigableMap<Entry, P>> ranges;
        /** True when the ranges' order is the query's order. */
        final boolean ordered;
        private final boolean descending;

        private Scan(List<NavigableMap<Entry, P>> ranges, boolean ordered, boolean descending) {
            this.ranges = ranges;
            this.ordered = ordered;
            this.descending = descending;
        }

        /**
         * This scan, marked ordered when {@code orderBy} (nonempty) names the index's keys from one of its
         * equality keys on, then optionally {@code _id}, each after the equalities in the index's direction or
         * each reversed (read backwards).
         */
        Scan orderedBy(Document orderBy, List<String> names, List<IndexKey> indexKeys, int equalities) {
            if (orderBy == null || orderBy.isEmpty() || ranges.size() != 1) {
                return this;
            }
            List<String> wanted = new ArrayList<>(orderBy.keySet());
            int start = names.indexOf(wanted.get(0));
            if (start < 0 || start > equalities) {
                return this;
            }
            Boolean reversed = null;
            for (int k = 0; k < wanted.size(); k++) {
                int at = start + k;
                String name = wanted.get(k);
                boolean ascending = orderBy.get(name) instanceof Number n && n.doubleValue() > 0;
                boolean indexAscending;
                if (at < names.size() && names.get(at).equals(name)) {
                    indexAscending = indexKeys.get(at).isAscending();
                } else if (at == names.size() && name.equals("_id")) {
                    indexAscending = true;
                } else {
                    return this;
                }
                if (at < equalities) {
                    continue;
                }
                boolean flip = ascending != indexAscending;
                if (reversed != null && reversed != flip) {
                    return this;
                }
                reversed = flip;
            }
            return new Scan(ranges, true, reversed != null && reversed);
        }

        /** The positions of the entries, each once, read lazily (a limit stops the read). */
        Iterable<P> positions() {
            return () -> new Iterator<P>() {
                private final Iterator<NavigableMap<Entry, P>> rangeIterator = ranges.iterator();
                private Iterator<P> current = java.util.Collections.emptyIterator();
                private final Set<P> seen = new HashSet<>();
                private P next;

                @Override
                public boolean hasNext() {
                    while (next == null) {
                        while (!current.hasNext()) {
                            if (!rangeIterator.hasNext()) {
                                return false;
                            }
                            NavigableMap<Entry, P> range = rangeIterator.next();
                            current = (descending ? range.descendingMap() : range).values().iterator();
                        }
                        P candidate = current.next();
                        if (seen.add(candidate)) {
                            next = candidate;
                        }
                    }
                    return true;
                }

                @Override
                public P next() {
                    if (!hasNext()) {
                        throw new NoSuchElementException();
                    }
                    P result = next;
                    next = null;
                    return result;
                }
            };
        }
    }
}
