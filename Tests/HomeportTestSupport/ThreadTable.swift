import Foundation

/// A process's threads as Linux lists them: for tests that check how threads are scheduled.
public enum ThreadTable {
    /// The threads of process `pid` (this process when `nil`), by thread id: each one's name and
    /// scheduling policy (`/proc/PID/task/TID/stat`: the name in parentheses, the policy in
    /// field 41). Empty where there is no `/proc`.
    public static func threads(of pid: Int32? = nil) -> [Int: (name: String, policy: Int)] {
        let directory = "/proc/\(pid.map(String.init) ?? "self")/task"
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var found: [Int: (name: String, policy: Int)] = [:]
        for task in tasks {
            guard let id = Int(task),
                let stat = try? String(contentsOfFile: "\(directory)/\(task)/stat", encoding: .utf8),
                let open = stat.range(of: "("), let close = stat.range(of: ")", options: .backwards)
            else { continue }
            // After the name's closing parenthesis: field 3 (the state) onwards.
            let fields = stat[close.upperBound...].split(separator: " ")
            if fields.count > 38, let policy = Int(fields[38]) {
                found[id] = (String(stat[open.upperBound..<close.lowerBound]), policy)
            }
        }
        return found
    }

    /// The scheduling policies of process `pid`'s threads named `name`.
    public static func policies(of pid: Int32, named name: String) -> [Int] {
        threads(of: pid).values.filter { $0.name == name }.map(\.policy)
    }
}
