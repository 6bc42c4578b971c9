import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportClient

@Suite("A server's handle on this device: fixed at enrolment, through every change of its key")
struct ServerHandleTests {
    @Test("an identity change or a moved primary keeps the handle; find takes it; two records never share one")
    func kept() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let directory = try ServerDirectory(directory: home.file("state"))
        let ada = try record(InstanceID(UUID()), primary: "http://127.0.0.1:1")
        let older = try record(nil, primary: "http://127.0.0.1:2")
        #expect(ada.localID != older.localID)
        try directory.save(ada)
        try directory.save(older)
        let reset = InstanceID(UUID())
        let moved = try #require(try directory.update(ada.key) { $0.instanceID = reset })
        #expect(moved.key == reset.description && moved.localID == ada.localID)
        // An older server's key is its primary URL: a new primary, the same handle.
        let elsewhere = try #require(
            try directory.update(older.key) {
                $0.primary = try! ServerAddress(parsing: "http://127.0.0.1:3", allowHTTP: true)
            })
        #expect(elsewhere.key != older.key && elsewhere.localID == older.localID)
        #expect(try directory.find(ada.localID.uuidString).key == reset.description)
        #expect(directory.server(older.localID)?.primary.url == "http://127.0.0.1:3")
    }

    @Test("a record saved over one of the same server keeps its handle (a sign-in racing an enrolment)")
    func savedOver() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let directory = try ServerDirectory(directory: home.file("state"))
        let id = InstanceID(UUID())
        let enrolled = try record(id, primary: "http://127.0.0.1:1")
        try directory.save(enrolled)
        let signedIn = try record(id, primary: "http://127.0.0.1:1")
        #expect(signedIn.localID != enrolled.localID, "made afresh")
        try directory.save(signedIn)
        #expect(directory.all.count == 1 && directory.all[0].localID == enrolled.localID)
    }

    @Test("a record written before handles were kept gets the same one at every read, kept once its key changes")
    func olderRecord() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let state = home.file("state")
        _ = try ServerDirectory(directory: state)
        let written = try JSONEncoder().encode([try record(id, primary: "http://127.0.0.1:1")])
        var objects = try #require(try JSONSerialization.jsonObject(with: written) as? [[String: Any]])
        objects[0]["localID"] = nil
        try JSONSerialization.data(withJSONObject: objects).write(to: URL(fileURLWithPath: state + "/servers.json"))
        let first = try ServerDirectory(directory: state).all[0].localID
        let again = try ServerDirectory(directory: state).all[0].localID
        #expect(first == again, "derived from the key, the same every time")
        let directory = try ServerDirectory(directory: state)
        let reset = try #require(try directory.update(id.description) { $0.instanceID = InstanceID(UUID()) })
        #expect(reset.localID == first, "pinned before the key changed")
        #expect(try ServerDirectory(directory: state).all[0].localID == first, "and stored")
    }

    @Test(
        "a server whose id is an older record's handle (derived from a key anyone may know) is refused, enrolled or reset to it"
    )
    func idTakingAHandle() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let state = home.file("state")
        _ = try ServerDirectory(directory: state)
        let victim = InstanceID(UUID())
        let written = try JSONEncoder().encode([try record(victim, primary: "http://127.0.0.1:1")])
        var objects = try #require(try JSONSerialization.jsonObject(with: written) as? [[String: Any]])
        objects[0]["localID"] = nil
        try JSONSerialization.data(withJSONObject: objects).write(to: URL(fileURLWithPath: state + "/servers.json"))
        let directory = try ServerDirectory(directory: state)
        let handle = try #require(directory.all.first).localID
        // The attacker's server takes the victim's handle as its id.
        let taken = try #require(InstanceID(handle.uuidString.lowercased()))
        let impostor = try record(taken, primary: "http://127.0.0.1:2")
        #expect(throws: ClientError.self) { try directory.save(impostor) }
        #expect(throws: ClientError.self) { _ = try directory.insertIfAbsent(impostor) }
        // Or an enrolled server resets its identity to it.
        let other = try record(InstanceID(UUID()), primary: "http://127.0.0.1:3")
        try directory.save(other)
        #expect(throws: ClientError.self) { try directory.update(other.key) { $0.instanceID = taken } }
        #expect(directory.all.count == 2)
        #expect(try directory.find(handle.uuidString).key == victim.description, "the handle names the victim")
        #expect(try handle.uuidString.record(in: directory).key == victim.description)
        #expect(directory.server(taken.description) == nil)
    }

    @Test(
        "the library's calls take a handle, a record or a key; a label, a prefix or a URL names no server and sends nothing"
    )
    func references() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        var books = try record(id, primary: "http://127.0.0.1:1")
        books.label = "Books"
        let transport = SpyTransport()
        let (client, _) = try scriptedClient(home, record: books, transport: transport)
        let stored = try #require(client.directory.all.first)
        #expect(try stored.localID.record(in: client.directory).key == id.description)
        #expect(try stored.localID.uuidString.record(in: client.directory).key == id.description)
        #expect(try id.description.record(in: client.directory).localID == stored.localID)
        // What the command line takes from a person names nothing in the library.
        for typed in ["Books", "books", String(id.description.prefix(8)), "http://127.0.0.1:1", UUID().uuidString] {
            #expect(throws: ClientError.unknownServer(typed)) { try typed.record(in: client.directory) }
            await #expect(throws: ClientError.unknownServer(typed)) {
                _ = try await client.send("GET", "/api/v1/books", to: typed)
            }
            await #expect(throws: ClientError.unknownServer(typed)) { _ = try await client.chooseAddress(for: typed) }
        }
        await #expect(throws: ClientError.self) { _ = try await client.chooseAddress(for: UUID()) }
        #expect(transport.requests.isEmpty, "nothing was sent for a name that names no server")
        // A copy read before an identity reset still names the server, as it is stored now.
        let reset = InstanceID(UUID())
        _ = try client.directory.update(id.description) { $0.instanceID = reset }
        #expect(try stored.record(in: client.directory).key == reset.description)
        #expect(try stored.localID.record(in: client.directory).instanceID == reset)
        #expect(throws: ClientError.unknownServer(id.description)) { try id.description.record(in: client.directory) }
        // A copy of a server no longer stored names nothing, though a token may still be kept under its key.
        try client.directory.remove(reset.description)
        #expect(throws: ClientError.unknownServer(stored.key)) { try stored.record(in: client.directory) }
        await #expect(throws: ClientError.unknownServer(stored.key)) { _ = try await client.chooseAddress(for: stored) }
        #expect(transport.requests.isEmpty)
    }
}
