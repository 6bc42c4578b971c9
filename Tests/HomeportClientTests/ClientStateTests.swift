import Foundation
import HomeportClient
import HomeportTestSupport
import Testing

@Suite("Client state two processes share, and text a server chose")
struct ClientStateTests {
    @Test("two directories on one folder (two processes) never undo each other's changes")
    func twoProcesses() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let watch = try ServerDirectory(directory: home.path)
        let a = try record(InstanceID(UUID()), primary: "https://a.example.net")
        let b = try record(InstanceID(UUID()), primary: "https://b.example.net")
        try watch.save(a)
        try watch.save(b)

        // Another terminal removes A; the running watch, which still holds A in memory, then
        // records a winner for it and saves a third server.
        let other = try ServerDirectory(directory: home.path)
        try other.remove(a.key)
        #expect(try watch.update(a.key) { $0.lastWinner = "https://a.example.net" } == nil)
        let c = try record(InstanceID(UUID()), primary: "https://c.example.net")
        try watch.save(c)

        let onDisk = Set(try ServerDirectory(directory: home.path).all.map(\.key))
        #expect(onDisk == [b.key, c.key], "the removal was undone or a save was lost: \(onDisk)")
        #expect(Set(watch.all.map(\.key)) == [b.key, c.key])
    }

    @Test("many writers at once from two directories lose nothing")
    func concurrentWriters() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let first = try ServerDirectory(directory: home.path)
        let second = try ServerDirectory(directory: home.path)
        let records = try (0..<40).map { try record(InstanceID(UUID()), primary: "https://s\($0).example.net") }
        DispatchQueue.concurrentPerform(iterations: records.count) { index in
            try? (index % 2 == 0 ? first : second).save(records[index])
        }
        #expect(try ServerDirectory(directory: home.path).all.count == records.count)
    }

    @Test("a server's text loses the controls a terminal or a reader would act on, bidirectional ones included")
    func serverText() {
        #expect(ServerText.clean("books\u{202E}moc.elpmaxe") == "booksmoc.elpmaxe")
        #expect(ServerText.clean("a\u{2066}b\u{2067}c\u{2068}d\u{2069}e\u{200E}f\u{200F}g\u{061C}h") == "abcdefgh")
        #expect(ServerText.clean("line\u{2028}break\u{2029}here") == "linebreakhere")
        #expect(ServerText.clean("\u{1B}]0;title\u{07}ok\u{9B}2J") == "]0;titleok2J")
        #expect(ServerText.clean("Café – 本 😀") == "Café – 本 😀", "ordinary text is kept")
    }
}
