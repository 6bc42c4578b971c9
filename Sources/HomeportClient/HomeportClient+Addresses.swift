import Foundation
import HomeportWire

extension HomeportClient {
    /// Adds an alternative address after probing it (no credential is sent): it is saved, verified
    /// on the current path, only if it answers with the enrolled id, product and protocol version;
    /// otherwise the error says what it answered. An address that already is an alternative is
    /// probed again: its verification on this path is renewed when it matches, and withdrawn only
    /// when it answers as something else (``ProbeOutcome/refutes``); no answer changes nothing.
    @discardableResult
    public func addAddress(_ address: ServerAddress, to server: some ServerReference) async throws -> ServerRecord {
        let record = try server.record(in: directory)
        guard let expected = record.expectedIdentity else {
            throw ClientError.notHomeport(
                address: record.primary.url, detail: "the server has no identity route, so it keeps one address")
        }
        guard address.url != record.primary.url else {
            throw ClientError.addressNotApplicable("\(address.url) is already the primary address of \(record.key)")
        }
        let outcome = await probe.probe(address, expected: expected)
        let path = networkPath
        let saved = try directory.update(record.key) { stored in
            guard stored.instanceID == record.instanceID else { return }
            if let index = stored.alternatives.firstIndex(where: { $0.address.url == address.url }) {
                if outcome.isMatch {
                    stored.alternatives[index].verifiedPaths[path] = Date()
                } else if outcome.refutes {
                    stored.alternatives[index].verifiedPaths[path] = nil
                }
            } else if outcome.isMatch {
                stored.alternatives.append(.init(address: address, verifiedPaths: [path: Date()]))
            }
        }
        forgetWinner(record.key)
        guard outcome.isMatch else { throw Self.error(for: outcome, at: address) }
        guard let saved else { throw ClientError.unknownServer(record.key) }
        return saved
    }

    /// Makes `address` the primary of `server` (a server that moved: a new name, HTTPS) once it
    /// answers as the enrolled installation; the session stays, nothing is sent to sign in again.
    /// Any other answer changes nothing and throws what it was.
    @discardableResult
    public func movePrimary(of server: some ServerReference, to address: ServerAddress) async throws -> ServerRecord {
        let record = try server.record(in: directory)
        guard address.url != record.primary.url else { return record }
        guard let expected = record.expectedIdentity else {
            throw ClientError.notHomeport(
                address: record.primary.url, detail: "the server has no identity route, so its primary cannot move")
        }
        let outcome = await probe.probe(address, expected: expected)
        guard outcome.isMatch, let moved = try movePrimary(record, to: address) else {
            throw Self.error(for: outcome, at: address)
        }
        return moved
    }

    /// Records `address`, which answered as the installation, as `record`'s primary (out of its
    /// alternatives, if it was one); `nil` when the record changed installation meanwhile.
    func movePrimary(_ record: ServerRecord, to address: ServerAddress) throws -> ServerRecord? {
        let moved = try directory.update(record.key) { stored in
            guard stored.instanceID == record.instanceID else { return }
            stored.primary = address
            stored.alternatives.removeAll { $0.address.url == address.url }
            stored.lastWinner = nil
        }
        forgetWinner(record.key)
        if moved != nil { onEvent(.primaryMoved(server: record.key, from: record.primary.url, to: address.url)) }
        return moved
    }

    /// Removes an alternative address from the record as it is stored now (a change another
    /// process made meanwhile stays).
    public func removeAddress(_ address: ServerAddress, from server: some ServerReference) throws {
        let key = try server.record(in: directory).key
        var removed = false
        let saved = try directory.update(key) { stored in
            let before = stored.alternatives.count
            stored.alternatives.removeAll { $0.address.url == address.url }
            removed = stored.alternatives.count < before
        }
        forgetWinner(key)
        guard saved != nil else { throw ClientError.unknownServer(key) }
        guard removed else {
            throw ClientError.addressNotApplicable("\(address.url) is not an alternative address of \(key)")
        }
    }

    /// Probes every address of a server on the current path (no credential is sent) and records
    /// which alternatives answer with the enrolled id, product and protocol version. An alternative
    /// that answers as something else loses its verification on this path; one that does not
    /// answer (in time, or at all) keeps what it had: silence is not a mismatch, and must not hand
    /// the primary back its standing trust.
    public func verifyAddresses(of server: some ServerReference) async throws -> [(
        address: ServerAddress, outcome: ProbeOutcome
    )] {
        let record = try server.record(in: directory)
        let expected = record.expectedIdentity
        let addresses = [record.primary] + record.alternatives.map(\.address)
        let probe = self.probe
        let outcomes = await withTaskGroup(of: (Int, ProbeOutcome).self) { group in
            for (index, address) in addresses.enumerated() {
                group.addTask { (index, await probe.probe(address, expected: expected)) }
            }
            var results: [Int: ProbeOutcome] = [:]
            for await (index, outcome) in group { results[index] = outcome }
            return results
        }
        let path = networkPath
        let answered = Dictionary(
            addresses.indices.compactMap { index in outcomes[index].map { (addresses[index].url, $0) } },
            uniquingKeysWith: { first, _ in first })
        try directory.update(record.key) { stored in
            guard stored.instanceID == record.instanceID else { return }
            for index in stored.alternatives.indices {
                guard let outcome = answered[stored.alternatives[index].address.url] else { continue }
                if outcome.isMatch {
                    stored.alternatives[index].verifiedPaths[path] = Date()
                } else if outcome.refutes {
                    stored.alternatives[index].verifiedPaths[path] = nil
                }
            }
        }
        forgetWinner(record.key)
        return addresses.indices.map { (addresses[$0], outcomes[$0] ?? .unreachable("no answer")) }
    }

    static func error(for outcome: ProbeOutcome, at address: ServerAddress) -> ClientError {
        switch outcome {
        case .match: .badAnswer(address: address.url, detail: "unexpected match")
        case .mismatch(let seen): .identityMismatch(address: address.url, seen: seen)
        case .notHomeport(let detail): .notHomeport(address: address.url, detail: detail)
        case .olderServer: .notHomeport(address: address.url, detail: "no identity route")
        case .notAnAPI: .notAnAPI(address: address.url, answer: "an HTML page")
        case .productMismatch, .identityUnavailable, .unproven:
            .probeFailed(address: address.url, outcome: outcome.description)
        case .offHostRedirect(let target): .offHostRedirect(address: address.url, target: target)
        case .movedToHTTPS(let moved): .offHostRedirect(address: address.url, target: moved.url)
        case .unreachable(let reason): .unreachable(address: address.url, reason: reason)
        case .noAnswerInTime: .unreachable(address: address.url, reason: outcome.description)
        }
    }
}
