import Synchronization
import Testing

@testable import HomeportLifecycle

/// A service that writes what happens to it into a shared journal, and fails to start when told.
private struct Recorder: Service {
    struct Refused: Error {}

    let name: String
    let journal: Journal
    var refuses = false

    func start() throws {
        if refuses {
            journal.add("refused \(name)")
            throw Refused()
        }
        journal.add("start \(name)")
    }

    func stop() {
        journal.add("stop \(name)")
    }
}

private final class Journal: Sendable {
    private let entries = Mutex<[String]>([])
    func add(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

@Suite("A service group")
struct ServiceGroupTests {
    @Test("starts its services in order and stops them in reverse, once")
    func order() throws {
        let journal = Journal()
        let reports = Journal()
        let group = ServiceGroup(["a", "b", "c"].map { Recorder(name: $0, journal: journal) }) { verb, name in
            reports.add("\(verb) \(name)")
        }
        try group.start()
        group.stop()
        group.stop()
        #expect(journal.all == ["start a", "start b", "start c", "stop c", "stop b", "stop a"])
        #expect(reports.all == ["started a", "started b", "started c", "stopped c", "stopped b", "stopped a"])
    }

    @Test("a service that fails to start stops those started before it, in reverse, and the error is thrown")
    func failedStart() throws {
        let journal = Journal()
        let group = ServiceGroup([
            Recorder(name: "a", journal: journal), Recorder(name: "b", journal: journal),
            Recorder(name: "c", journal: journal, refuses: true), Recorder(name: "d", journal: journal),
        ])
        #expect(throws: Recorder.Refused.self) { try group.start() }
        #expect(journal.all == ["start a", "start b", "refused c", "stop b", "stop a"])
        // Nothing is left running: a later stop stops nothing.
        group.stop()
        #expect(journal.all.count == 5)
    }

    @Test("a group stopped can start again")
    func restart() throws {
        let journal = Journal()
        let group = ServiceGroup([Recorder(name: "a", journal: journal)])
        try group.start()
        group.stop()
        try group.start()
        group.stop()
        #expect(journal.all == ["start a", "stop a", "start a", "stop a"])
    }
}
