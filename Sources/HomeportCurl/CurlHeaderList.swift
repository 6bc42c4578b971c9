import CCurl

/// Request header lines in libcurl's list, freed with their owner: keep it alive until the
/// transfer that reads it ends.
package final class CurlHeaderList {
    /// The list libcurl reads.
    package private(set) var pointer: UnsafeMutablePointer<curl_slist>?

    /// `lines` as given (`Name: value`; `Name:` removes a header libcurl would add).
    package init(_ lines: [String]) {
        for line in lines { pointer = curl_slist_append(pointer, line) }
    }

    deinit {
        curl_slist_free_all(pointer)
    }
}
