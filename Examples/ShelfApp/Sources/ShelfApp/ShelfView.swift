import HomeportClient
import ShelfKit
import SwiftUI

/// The servers beside the one shown; the sheet that adds a server or finishes a sign-in; the
/// alert that tells the person what happened.
struct ShelfView: View {
    let shelf: Shelf
    @State private var adding = false

    var body: some View {
        NavigationSplitView {
            ServerList(shelf: shelf)
                .toolbar {
                    Button {
                        adding = true
                    } label: {
                        Label("Add a library", systemImage: "plus")
                    }
                }
        } detail: {
            LibraryView(shelf: shelf)
        }
        .sheet(isPresented: sheetShown) {
            // An alert shows from the sheet while it is up (iOS shows none from beneath it).
            StepSheet(shelf: shelf).noticeAlert(shelf)
        }
        .onChange(of: shelf.selection) {
            adding = false
        }
        .onChange(of: shelf.step) { before, now in
            // Signed in (or kept) on the server already shown: the selection did not change.
            if before != nil, now == nil { adding = false }
        }
        .noticeAlert(shelf, active: !sheetShown.wrappedValue)
    }

    /// The sheet is up while the person adds a server or the client asks something of them.
    private var sheetShown: Binding<Bool> {
        Binding(
            get: { adding || shelf.step != nil },
            set: { shown in
                guard !shown else { return }
                adding = false
                shelf.cancelStep()
            })
    }
}

extension View {
    /// Shows the shelf's notice as an alert (while `active`), and clears it once read.
    func noticeAlert(_ shelf: Shelf, active: Bool = true) -> some View {
        alert(
            shelf.notice?.title ?? "",
            isPresented: Binding(get: { active && shelf.notice != nil }, set: { if !$0 { shelf.notice = nil } }),
            presenting: shelf.notice,
            actions: { _ in Button("OK") { shelf.notice = nil } },
            message: { notice in Text(notice.advice ?? "") })
    }
}
