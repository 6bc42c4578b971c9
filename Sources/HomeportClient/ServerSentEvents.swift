/// One event of a `text/event-stream`.
public struct ServerSentEvent: Sendable, Equatable {
    /// The event type (`event:`), `message` when the server named none.
    public var type: String
    /// The data lines, joined with newlines.
    public var data: String
    /// The last event id in force when the event was dispatched (`id:`; it carries over to
    /// later events that name none). Empty when the server never named one.
    public var lastEventID: String

    /// Creates an event.
    public init(type: String, data: String, lastEventID: String) {
        self.type = type
        self.data = data
        self.lastEventID = lastEventID
    }
}

/// Reads `text/event-stream` as the WHATWG HTML standard (§9.2.6) says, chunk by chunk: lines end
/// with CR, LF or CRLF (even split across chunks); a leading byte-order mark is ignored; a blank
/// line dispatches; a line starting with `:` is a comment (a heartbeat); an `id` containing NUL is
/// ignored; an event still open when the body ends is never dispatched (the caller discards it and
/// resumes after the last whole event). One event — its lines as they are read — may hold at most
/// `limit` bytes: a larger one ends the chunk's items with ``Item/overflow(limit:)``, after the
/// events completed before it, and nothing more is read.
struct ServerSentEventParser {
    /// What a chunk yielded, in order.
    enum Item: Equatable {
        /// A whole event with data.
        case event(ServerSentEvent)
        /// A comment line (`: keepalive`).
        case comment
        /// The server's reconnection time, in milliseconds.
        case retry(Int)
        /// An event (or a line) over the limit: the last item; the parser reads nothing more.
        case overflow(limit: Int)
    }

    let limit: Int
    /// The id of the last dispatched event (or set by an event without data): where to resume.
    private(set) var lastEventID = ""
    private var idBuffer = ""
    private var line: [UInt8] = []
    private var data: [String] = []
    private var type = ""
    private var eventBytes = 0
    private var afterCR = false
    private var firstLine = true
    private var overflowed = false

    init(limit: Int, lastEventID: String = "") {
        self.limit = limit
        self.lastEventID = lastEventID
        self.idBuffer = lastEventID
    }

    /// Feeds a chunk; returns what it completed, in order.
    mutating func feed(_ chunk: some Sequence<UInt8>) -> [Item] {
        guard !overflowed else { return [] }
        var items: [Item] = []
        for byte in chunk {
            if afterCR {
                afterCR = false
                if byte == 0x0A { continue }  // the LF of a CRLF
            }
            switch byte {
            case 0x0D:
                afterCR = true
                if let item = endLine() { items.append(item) }
            case 0x0A:
                if let item = endLine() { items.append(item) }
            default:
                line.append(byte)
                eventBytes += 1
            }
            if eventBytes > limit {
                overflowed = true
                return items + [.overflow(limit: limit)]
            }
        }
        return items
    }

    private mutating func endLine() -> Item? {
        var bytes = line[...]
        let length = line.count
        line.removeAll(keepingCapacity: true)
        if firstLine {
            firstLine = false
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        }
        if bytes.isEmpty { return dispatch() }
        if bytes.first == UInt8(ascii: ":") {
            // A heartbeat is not part of an event: it never adds up towards the limit.
            eventBytes -= length
            return .comment
        }
        eventBytes += 1
        let text = String(decoding: bytes, as: UTF8.self)
        let field: Substring
        var value: Substring
        if let colon = text.firstIndex(of: ":") {
            field = text[..<colon]
            value = text[text.index(after: colon)...]
            if value.first == " " { value = value.dropFirst() }
        } else {
            field = text[...]
            value = ""
        }
        switch field {
        case "event": type = String(value)
        case "data": data.append(String(value))
        case "id" where !value.contains("\u{0}"): idBuffer = String(value)
        case "retry" where !value.isEmpty && value.allSatisfy({ $0.isASCII && $0.isNumber }):
            return Int(value).map { .retry($0) }
        default: break
        }
        return nil
    }

    private mutating func dispatch() -> Item? {
        defer {
            data.removeAll()
            type = ""
            eventBytes = 0
        }
        lastEventID = idBuffer
        guard !data.isEmpty else { return nil }
        return .event(
            ServerSentEvent(
                type: type.isEmpty ? "message" : type, data: data.joined(separator: "\n"), lastEventID: lastEventID))
    }
}
