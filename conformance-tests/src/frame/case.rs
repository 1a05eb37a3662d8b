//! The frame suite's case types, which its families and the runner (`mod.rs`) share: a
//! [`FrameFamily`] (an op, the column types it runs over, what it needs of a backend, its
//! run function), a [`FrameCase`], the [`FrameSide`] a run function gets (the backend
//! under test or the reference, with the oracle's expectation), and the [`Output`]s it
//! returns.

use std::sync::Mutex;

use arrow_array::RecordBatch;
use tessera_core::frame::{AggFunc, FrameBackendRef, JoinAlgorithm, Partition};
use tessera_core::{Error, Result};

use super::compare::{FloatTol, Order};
use super::data::ColType;
use super::oracle;
use crate::case::Group;
use crate::gen::Gen;

/// One side of a comparison.
pub struct FrameSide {
    /// The backend.
    pub backend: FrameBackendRef,
    /// True on the reference side (API frames get one partition).
    pub reference: bool,
    notes: Mutex<Vec<String>>,
    /// What the oracle says the case's outputs are, stated on the reference side.
    expect: Mutex<Option<Expectation>>,
}

/// What the oracle states about a case's outputs.
pub enum Expectation {
    /// The outputs themselves (one batch per output).
    Exact(oracle::Answer),
    /// Bounds, for an estimate (the t-digest's): per output a lower and an upper batch,
    /// whose columns but the last equal the output's, and whose last column bounds the
    /// output's last, value by value (null where the output is null).
    Within(std::result::Result<(Vec<RecordBatch>, Vec<RecordBatch>), String>),
}

impl FrameSide {
    pub(crate) fn new(backend: FrameBackendRef, reference: bool) -> FrameSide {
        FrameSide {
            backend,
            reference,
            notes: Mutex::new(Vec::new()),
            expect: Mutex::new(None),
        }
    }

    /// States the outputs the case must produce, computed by `oracle` from the inputs
    /// ([`oracle`]: one batch per output, in the case's order). Only the reference side
    /// evaluates it: the reference is checked against the oracle, every other backend
    /// against the reference. Call it before running the op.
    pub fn expect(&self, oracle: impl FnOnce() -> oracle::Answer) {
        if self.reference {
            *self.expect.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(Expectation::Exact(oracle()));
        }
    }

    /// As [`FrameSide::expect`], for an output that is an estimate: the oracle states a
    /// lower and an upper batch per output ([`Expectation::Within`]).
    pub fn expect_within(
        &self,
        oracle: impl FnOnce() -> std::result::Result<(Vec<RecordBatch>, Vec<RecordBatch>), String>,
    ) {
        if self.reference {
            *self.expect.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(Expectation::Within(oracle()));
        }
    }

    pub(crate) fn take_expect(&self) -> Option<Expectation> {
        self.expect.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// The notes taken so far, joined (what a failing case prints as its inputs).
    pub(crate) fn notes(&self) -> String {
        self.notes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .join("; ")
    }

    /// Describes an input for the report (kept from the reference side).
    pub fn note(&self, text: impl Into<String>) {
        self.notes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(text.into());
    }

    /// A batch as a partition of this backend.
    ///
    /// # Errors
    /// What the backend's `import_batch` returns.
    pub fn import(&self, b: RecordBatch) -> Result<Partition> {
        self.backend.import_batch(b)
    }

    /// A partition back on the host, checked to be this backend's and to have as many
    /// rows as it says.
    ///
    /// # Errors
    /// What `export_batch` returns; [`Error::Plugin`]-style protocol errors when the
    /// partition is foreign or its row count is wrong.
    pub fn export(&self, p: &Partition) -> Result<RecordBatch> {
        if p.backend() != self.backend.name() {
            return Err(Error::ForeignPartition {
                op: "export_batch".into(),
                backend: self.backend.name().into(),
                owner: p.backend().into(),
            });
        }
        let b = self.backend.export_batch(p)?;
        if b.num_rows() != p.num_rows() {
            return Err(Error::Internal(format!(
                "backend '{}': a partition says it has {} rows but exports {}",
                self.backend.name(),
                p.num_rows(),
                b.num_rows()
            )));
        }
        Ok(b)
    }
}

/// One output of a case, with how it is compared.
pub struct Output {
    /// The batch.
    pub batch: RecordBatch,
    /// Whether its row order is part of the contract.
    pub order: Order,
    /// Float tolerance.
    pub tol: FloatTol,
}

impl Output {
    /// An output compared row by row, floats exactly.
    pub fn exact(batch: RecordBatch) -> Output {
        Output {
            batch,
            order: Order::Exact,
            tol: FloatTol::EXACT,
        }
    }

    /// An output compared in any row order, floats exactly.
    pub fn unordered(batch: RecordBatch) -> Output {
        Output {
            batch,
            order: Order::Unordered,
            tol: FloatTol::EXACT,
        }
    }

    /// The same with the float tolerance of sums.
    pub fn with_sums(self) -> Output {
        Output {
            tol: FloatTol::SUMS,
            ..self
        }
    }
}

/// What a case needs that a backend may declare missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Only required primitives.
    Required,
    /// An aggregation ([`FrameCapabilities::missing_aggregations`](tessera_core::frame::FrameCapabilities)).
    Aggregation(AggFunc),
    /// A pairwise join algorithm.
    JoinAlgorithm(JoinAlgorithm),
    /// The window functions ([`FrameCapabilities::windows`](tessera_core::frame::FrameCapabilities)).
    Windows,
    /// Columns in a stored form in place of the plan's type
    /// ([`StoredForm::declared`]).
    StoredForm(StoredForm),
}

/// A case's body: called once per side with identically seeded generators.
pub type FrameRun = fn(&FrameSide, &mut Gen, ColType, usize) -> Result<Vec<Output>>;

/// An op of the frame protocol or API with the types it takes.
#[derive(Clone)]
pub struct FrameFamily {
    /// `frame.filter`, `frame.aggregate.sum`, `frame.api.merge`, ...
    pub op: String,
    /// Protocol or API.
    pub group: Group,
    /// The column types it runs on.
    pub types: Vec<ColType>,
    /// What it needs beyond the required primitives.
    pub need: Need,
    /// The body.
    pub run: FrameRun,
}

/// One generated case.
#[derive(Clone)]
pub struct FrameCase {
    /// `op/type/variant`.
    pub id: String,
    /// Its family.
    pub family: FrameFamily,
    /// Column type.
    pub ty: ColType,
    /// Variant.
    pub variant: usize,
}

/// A stored form a backend may declare it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredForm {
    /// `Dictionary(Int32, Utf8)` group keys (`StoredForms::dictionary_keys`).
    DictionaryKeys,
    /// `Decimal64` decimals of at most 18 digits (`StoredForms::narrow_decimals`).
    Decimal64,
    /// `Utf8View` group keys (`StoredForms::view_keys`).
    ViewKeys,
}

impl StoredForm {
    /// Whether `backend` declares that it takes this form.
    pub fn declared(self, backend: &dyn tessera_core::frame::DataFrameBackend) -> bool {
        match self {
            StoredForm::DictionaryKeys => backend.capabilities().stored_forms.dictionary_keys,
            StoredForm::Decimal64 => backend.capabilities().stored_forms.narrow_decimals,
            StoredForm::ViewKeys => backend.capabilities().stored_forms.view_keys,
        }
    }
}
