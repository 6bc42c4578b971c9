import Foundation
import Testing

@testable import HomeportClient

/// Reading `text/event-stream` as the standard says, chunk by chunk.
@Suite("Server-sent events: the standard's parsing rules, with a limit per event")
struct ServerSentEventsTests {
    func parse(_ chunks: [String], limit: Int = 1024) -> [ServerSentEventParser.Item] {
        var parser = ServerSentEventParser(limit: limit)
        return chunks.flatMap { parser.feed(Array($0.utf8)) }
    }

    func event(_ type: String, _ data: String, _ id: String) -> ServerSentEventParser.Item {
        .event(ServerSentEvent(type: type, data: data, lastEventID: id))
    }

    @Test("events, comments and ids, with lines ending in LF, CR or CRLF, split anywhere")
    func lineEndings() throws {
        let text = "id: 1\nevent: notification\ndata: {\"a\":1}\n\n: keepalive\r\nid: 2\r\ndata: x\r\ndata: y\r\r\n"
        let whole = parse([text])
        #expect(
            whole == [
                event("notification", #"{"a":1}"#, "1"), .comment, event("message", "x\ny", "2"),
            ])
        // Every split point, including between the CR and the LF of a CRLF.
        for cut in 1..<text.utf8.count {
            let bytes = Array(text.utf8)
            var parser = ServerSentEventParser(limit: 1024)
            let items = parser.feed(bytes[..<cut]) + parser.feed(bytes[cut...])
            #expect(items == whole, "split at \(cut)")
        }
    }

    @Test("an event still open when the body ends is never dispatched, and its id does not count")
    func halfEvent() throws {
        var parser = ServerSentEventParser(limit: 1024)
        let items = parser.feed(Array("id: 1\ndata: a\n\nid: 2\ndata: b\n".utf8))
        #expect(items == [event("message", "a", "1")])
        #expect(parser.lastEventID == "1")
    }

    @Test("the id carries over; an id with NUL is ignored; an event without data still sets the id")
    func ids() throws {
        var parser = ServerSentEventParser(limit: 1024, lastEventID: "7")
        let items = parser.feed(Array("data: a\n\nid: 8\u{0}\ndata: b\n\nid: 9\n\n".utf8))
        #expect(items == [event("message", "a", "7"), event("message", "b", "7")])
        #expect(parser.lastEventID == "9")
    }

    @Test("a leading byte-order mark is ignored; retry is read; unknown fields are ignored")
    func details() throws {
        let items = parse(["\u{FEFF}retry: 2500\nfoo: bar\ndata:no-space\n\nretry: soon\n"])
        #expect(items == [.retry(2500), event("message", "no-space", "")])
    }

    @Test(
        "an event over the limit is skipped where it ends, its id kept; the events after it are read; heartbeats never add up"
    )
    func limit() throws {
        // An oversized event that has not ended yet yields nothing (and keeps nothing of its data).
        #expect(parse(["data: " + String(repeating: "x", count: 100)], limit: 64) == [])
        #expect(parse(Array(repeating: "data: 0123456789\n", count: 10), limit: 64) == [])
        #expect(
            parse(Array(repeating: "foo: 0123456789\n", count: 10) + ["\n"], limit: 64) == [
                .overflow(limit: 64, lastEventID: "")
            ])
        #expect(
            parse(["data: a\n\nid: 5\ndata: " + String(repeating: "x", count: 100) + "\n\ndata: b\n\n"], limit: 64) == [
                event("message", "a", ""), .overflow(limit: 64, lastEventID: "5"), event("message", "b", "5"),
            ])
        // Its id may come after the data: it still moves the resume point, and is not cut off.
        #expect(
            parse(["data: " + String(repeating: "x", count: 100) + "\nid: 9\n\ndata: c\n\n"], limit: 64) == [
                .overflow(limit: 64, lastEventID: "9"), event("message", "c", "9"),
            ])
        // The line the limit is passed in is discarded whatever its end holds.
        #expect(
            parse(["data: " + String(repeating: "x", count: 58) + "id: 66\n\n"], limit: 64) == [
                .overflow(limit: 64, lastEventID: "")
            ])
        let heartbeats = parse(Array(repeating: ": keepalive\n", count: 1000) + ["data: x\n\n"], limit: 64)
        #expect(heartbeats.count == 1001)
    }
}
