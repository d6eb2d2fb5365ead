//! What a query of workspace-divided memory (decisions, free-form entries, decision feed items)
//! sees: one owner's rows, narrowed to a workspace.

use uuid::Uuid;

use super::owner::Owner;

#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    pub owner: Owner<'a>,
    /// `Some(w)`: the rows of workspace `w` and the account-wide ones (recorded with no
    /// workspace active); never another workspace's. `None`: every row of the owner. Writes
    /// record it as the row's workspace.
    pub workspace: Option<Uuid>,
}

impl<'a> View<'a> {
    /// Every row of the owner (and writes that are account-wide).
    pub fn whole(owner: Owner<'a>) -> Self {
        Self {
            owner,
            workspace: None,
        }
    }

    /// Whether a row of workspace `row` (`None`: account-wide) is seen.
    pub fn sees(&self, row: Option<Uuid>) -> bool {
        match (self.workspace, row) {
            (None, _) | (_, None) => true,
            (Some(view), Some(row)) => view == row,
        }
    }
}

/// The SQL condition a row meets when a view sees it: `$param` binds the view's workspace (a
/// nullable uuid), `column` is the row's `workspace_id`.
pub fn visible(column: &str, param: usize) -> String {
    format!("(${param}::uuid IS NULL OR {column} IS NULL OR {column} = ${param})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspace_sees_itself_and_the_account_never_another_workspace() {
        let owner = Owner {
            user_id: Uuid::now_v7(),
            environment: "live",
        };
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let in_a = View {
            owner,
            workspace: Some(a),
        };
        assert!(in_a.sees(Some(a)));
        assert!(in_a.sees(None));
        assert!(!in_a.sees(Some(b)));
        let whole = View::whole(owner);
        assert!(whole.sees(Some(a)) && whole.sees(Some(b)) && whole.sees(None));
        assert_eq!(
            visible("d.workspace_id", 3),
            "($3::uuid IS NULL OR d.workspace_id IS NULL OR d.workspace_id = $3)"
        );
    }
}
