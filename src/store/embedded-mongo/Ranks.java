import java.util.Comparator;
import java.util.SplittableRandom;

/**
 * A set of distinct elements in a given order that says how many lie between two bounds in O(log n): a treap (a
 * binary search tree kept balanced, in expectation, by random priorities) whose nodes know the size of their subtree.
 * {@link SecondaryIndex#count} counts ranges of index entries with it, where walking them took a millisecond or more
 * for every 10,000 entries. Not thread-safe: its index calls it under its lock.
 *
 * @param <E> the elements; two of them compare equal only when they are the same element
 */
final class Ranks<E> {

    private static final class Node<E> {
        final E element;
        final int priority;
        int size = 1;
        Node<E> left;
        Node<E> right;

        Node(E element, int priority) {
            this.element = element;
            this.priority = priority;
        }
    }

    private final Comparator<? super E> order;
    /** Fixed seed: the shape is random in expectation over elements, not over runs. */
    private final SplittableRandom random = new SplittableRandom(0x5eed);
    private Node<E> root;

    Ranks(Comparator<? super E> order) {
        this.order = order;
    }

    /** Adds {@code element}, which must not be in the set yet. */
    void add(E element) {
        root = insert(root, new Node<>(element, random.nextInt()));
    }

    /** Removes {@code element} if it is in the set. */
    void remove(E element) {
        root = delete(root, element);
    }

    /** How many elements come after {@code low} and before {@code high}, two bounds that equal no element. */
    long between(E low, E high) {
        return Math.max(0, before(high) - before(low));
    }

    /** How many elements come before {@code bound}, which equals no element. */
    private long before(E bound) {
        long n = 0;
        for (Node<E> node = root; node != null; ) {
            if (order.compare(node.element, bound) < 0) {
                n += size(node.left) + 1;
                node = node.right;
            } else {
                node = node.left;
            }
        }
        return n;
    }

    private Node<E> insert(Node<E> tree, Node<E> node) {
        if (tree == null) {
            return node;
        }
        if (node.priority > tree.priority) {
            split(tree, node.element, node);
            return resized(node);
        }
        if (order.compare(node.element, tree.element) < 0) {
            tree.left = insert(tree.left, node);
        } else {
            tree.right = insert(tree.right, node);
        }
        return resized(tree);
    }

    /** Splits {@code tree} at {@code at}: what comes before it becomes {@code into}'s left subtree, the rest its right. */
    private void split(Node<E> tree, E at, Node<E> into) {
        if (tree == null) {
            into.left = null;
            into.right = null;
            return;
        }
        Node<E> halves = new Node<>(null, 0);
        if (order.compare(tree.element, at) < 0) {
            split(tree.right, at, halves);
            tree.right = halves.left;
            into.left = resized(tree);
            into.right = halves.right;
        } else {
            split(tree.left, at, halves);
            tree.left = halves.right;
            into.left = halves.left;
            into.right = resized(tree);
        }
    }

    private Node<E> delete(Node<E> tree, E element) {
        if (tree == null) {
            return null;
        }
        int c = order.compare(element, tree.element);
        if (c == 0) {
            return merge(tree.left, tree.right);
        }
        if (c < 0) {
            tree.left = delete(tree.left, element);
        } else {
            tree.right = delete(tree.right, element);
        }
        return resized(tree);
    }

    /** The union of two trees, every element of {@code left} before every element of {@code right}. */
    private Node<E> merge(Node<E> left, Node<E> right) {
        if (left == null) {
            return right;
        }
        if (right == null) {
            return left;
        }
        if (left.priority > right.priority) {
            left.right = merge(left.right, right);
            return resized(left);
        }
        right.left = merge(left, right.left);
        return resized(right);
    }

    private static int size(Node<?> node) {
        return node == null ? 0 : node.size;
    }

    private static <E> Node<E> resized(Node<E> node) {
        node.size = 1 + size(node.left) + size(node.right);
        return node;
    }
}
