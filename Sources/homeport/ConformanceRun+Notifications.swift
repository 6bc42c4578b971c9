import Foundation
import HomeportClient
import HomeportWire

/// The checks of the notification routes, with the test account's session: push registration,
/// the catalogue's `ETag`, and mutes. Each leaves nothing behind (the made-up device token is
/// unregistered, the made-up thread unmuted).
extension ConformanceRun {
    /// `POST /api/v1/push/devices` with a made-up token, a bad one and none, then the token
    /// unregistered twice.
    func pushRegistration() async throws -> ConformanceOutcome {
        guard account != nil else { return Self.noAccount }
        guard let token else { return Self.noSession }
        if olderServer { return Self.noPrefix }
        var generator = SystemRandomNumberGenerator()
        let device = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }
            .joined()
        var problems: [String] = []
        let session = [HomeportHeader.sessionToken: token]
        let registered = try await http.post(
            HomeportPath.pushDevices, json: ["token": device.uppercased(), "environment": "sandbox"], headers: session)
        let object = try registered.object(expecting: 200)
        if object["token"]?.string != device {
            problems.append("the answer names \(object["token"]?.shown ?? "no token"), not the token in lower case")
        }
        let bad = try await http.post(
            HomeportPath.pushDevices, json: ["token": "not a device token", "environment": "sandbox"], headers: session)
        if bad.status != 400 { problems.append("a token that is not hex answered \(bad.summary), not 400") }
        let anonymous = try await http.post(
            HomeportPath.pushDevices, json: ["token": device, "environment": "sandbox"])
        if anonymous.status != 401 { problems.append("no token answered \(anonymous.summary), not 401") }
        for attempt in ["unregistering", "unregistering again"] {
            let removed = try await http.send(
                "DELETE", HomeportPath.pushDevice(device), headers: session)
            if !(200..<300).contains(removed.status) { problems.append("\(attempt) answered \(removed.summary)") }
        }
        return .judge(
            problems,
            passing:
                "a device token registers (in lower case), a bad one is 400, none is 401; unregistering twice is 2xx")
    }

    /// `GET /api/v1/notifications/catalogue`, then again with its `ETag` in `If-None-Match`.
    func catalogueETag() async throws -> ConformanceOutcome {
        guard account != nil else { return Self.noAccount }
        guard let token else { return Self.noSession }
        if olderServer { return Self.noPrefix }
        let first = try await http.get(HomeportPath.notificationsCatalogue, token: token)
        let object = try first.object(expecting: 200)
        var problems: [String] = []
        guard let version = object["version"]?.string, !version.isEmpty else {
            return .fail("version is \(object["version"]?.shown ?? "missing"), not a string")
        }
        let codes = object["codes"]?.array
        if codes == nil || codes?.contains(where: { $0["code"]?.string == nil || $0["title"]?.string == nil }) == true {
            problems.append("codes is not an array of {code, title}")
        }
        let etag = first.headers["etag"]
        if etag != "\"\(version)\"" {
            problems.append(
                "ETag is \(etag.map { ServerText.clean($0, limit: 60) } ?? "missing"), not the quoted version")
        }
        let again = try await http.send(
            "GET", HomeportPath.notificationsCatalogue,
            headers: [HomeportHeader.sessionToken: token, "If-None-Match": etag ?? "\"\(version)\""])
        if again.status != 304 || !again.body.isEmpty {
            problems.append(
                "If-None-Match with the ETag answered \(again.summary) (\(again.body.count) bytes), not an empty 304")
        }
        let stale = try await http.send(
            "GET", HomeportPath.notificationsCatalogue,
            headers: [HomeportHeader.sessionToken: token, "If-None-Match": "\"not-\(version)\""])
        if stale.status != 200 { problems.append("another version's ETag answered \(stale.summary), not 200") }
        return .judge(
            problems,
            passing: "\(codes?.count ?? 0) codes, version \(ServerText.clean(version, limit: 20)); 304 to its ETag")
    }

    /// A made-up thread muted, listed, muted again, unmuted; a bad thread id refused.
    func mutes() async throws -> ConformanceOutcome {
        guard account != nil else { return Self.noAccount }
        guard let token else { return Self.noSession }
        if olderServer { return Self.noPrefix }
        let thread = "conformance:" + String(Conformance.randomSessionKey().prefix(12))
        let headers = [HomeportHeader.sessionToken: token]
        var problems: [String] = []
        for attempt in ["muting", "muting again"] {
            let muted = try await http.send("PUT", HomeportPath.notificationsMute(thread), headers: headers)
            if !(200..<300).contains(muted.status) { problems.append("\(attempt) answered \(muted.summary)") }
        }
        let listed = try await http.get(HomeportPath.notificationsMutes, token: token).object(expecting: 200)
        if listed["threads"]?.array?.contains(where: { $0.string == thread }) != true {
            problems.append("the muted thread is not in the list")
        }
        let unmuted = try await http.send("DELETE", HomeportPath.notificationsMute(thread), headers: headers)
        if !(200..<300).contains(unmuted.status) { problems.append("unmuting answered \(unmuted.summary)") }
        let after = try await http.get(HomeportPath.notificationsMutes, token: token).object(expecting: 200)
        if after["threads"]?.array?.contains(where: { $0.string == thread }) != false {
            problems.append("the thread is still listed after unmuting")
        }
        let bad = try await http.send("PUT", HomeportPath.notificationsMute("bad%20thread"), headers: headers)
        if bad.status != 400 { problems.append("a thread id with a blank answered \(bad.summary), not 400") }
        return .judge(problems, passing: "muted twice, listed, unmuted, gone from the list; a bad thread id is 400")
    }
}
