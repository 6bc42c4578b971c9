import Foundation

/// The rows of one conformance run, as a table for people or JSON for programs.
struct ConformanceReport {
    /// The address checked.
    let url: String
    /// The rows, in order.
    let rows: [ConformanceRow]

    /// Whether no check failed.
    var passed: Bool { !rows.contains { $0.result == .fail } }

    /// How many rows have each result, in the order of ``ConformanceResult/allCases``.
    var counts: [(result: ConformanceResult, count: Int)] {
        ConformanceResult.allCases.map { result in (result, rows.filter { $0.result == result }.count) }
    }

    /// The table: a heading, one row per check (result, id, title, and the detail under the title),
    /// and a count of each result.
    var lines: [String] {
        let resultWidth = ConformanceResult.allCases.map(\.rawValue.count).max()! + 2
        let idWidth = (rows.map(\.check.id.count).max() ?? 0) + 2
        let pad = { (text: String, width: Int) in
            text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0)
        }
        var lines = ["Homeport protocol version 1, checked at \(url)", ""]
        lines.append(pad("RESULT", resultWidth) + pad("CHECK", idWidth) + "WHAT / WHAT WAS SEEN")
        for row in rows {
            lines.append(pad(row.result.rawValue, resultWidth) + pad(row.check.id, idWidth) + row.check.title)
            lines.append(String(repeating: " ", count: resultWidth + idWidth) + row.detail)
        }
        lines.append("")
        lines.append(
            "\(rows.count) checks: "
                + counts.map { "\($0.count) \($0.result.rawValue)" }.joined(separator: ", ")
                + (passed ? "; nothing failed" : ""))
        return lines
    }

    /// The JSON result: `{url, passed, counts, checks: [{id, title, result, detail}]}`.
    var json: [String: Any] {
        [
            "url": url, "protocolVersion": 1, "passed": passed,
            "counts": Dictionary(uniqueKeysWithValues: counts.map { ($0.result.rawValue, $0.count) }),
            "checks": rows.map {
                ["id": $0.check.id, "title": $0.check.title, "result": $0.result.rawValue, "detail": $0.detail]
            },
        ]
    }
}
