/// An ordered list of header fields with case-insensitive lookup.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// The fields in the order they were added.
    public private(set) var fields: [(name: String, value: String)]

    /// Creates headers from name–value pairs.
    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields
    }

    /// Creates headers from a literal.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.fields = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The first value of `name` (case-insensitive), or `nil`.
    public subscript(name: String) -> String? {
        fields.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Every value of `name` (case-insensitive), in order.
    public func values(_ name: String) -> [String] {
        var values: [String] = []
        for field in fields where field.name.caseInsensitiveEquals(name) { values.append(field.value) }
        return values
    }

    /// Whether a field named `name` is present.
    public func contains(_ name: String) -> Bool {
        fields.contains { $0.name.caseInsensitiveEquals(name) }
    }

    /// Appends a field, keeping any existing one of the same name.
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name: name, value: value))
    }

    /// Replaces every field named `name` with one field. Writes nothing when that one field is
    /// already there (fields shared with another copy stay shared).
    public mutating func set(_ name: String, _ value: String) {
        var matches = 0
        var same = true
        for field in fields where field.name.caseInsensitiveEquals(name) {
            matches += 1
            same = same && field.value == value
        }
        if matches == 1 && same { return }
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
        fields.append((name: name, value: value))
    }

    /// The same fields in the same order; at once when both share their storage (an answer
    /// a ``PreparedResponse`` gave and no middleware changed).
    package func hasSameFields(as other: HTTPHeaders) -> Bool {
        guard fields.count == other.fields.count else { return false }
        let shared = fields.withUnsafeBufferPointer { mine in
            other.fields.withUnsafeBufferPointer { $0.baseAddress == mine.baseAddress }
        }
        return shared || zip(fields, other.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }
}

extension String {
    /// ASCII case-insensitive equality (header field names, tokens), byte by byte.
    func caseInsensitiveEquals(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        if self == other { return true }
        var lhs = self
        var rhs = other
        return lhs.withUTF8 { a in
            rhs.withUTF8 { b in
                for index in 0..<a.count where a[index] != b[index] {
                    let folded = a[index] | 0x20
                    guard folded == b[index] | 0x20, folded >= 0x61, folded <= 0x7A else { return false }
                }
                return true
            }
        }
    }
}
