//! Element types: what A and B may hold (f16, bf16) and what C may hold (f16, bf16, f32).

use half::{bf16, f16};

/// The element types the library knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE half precision.
    F16,
    /// bfloat16.
    Bf16,
    /// IEEE single precision.
    F32,
}

impl DType {
    /// The short name (`f16`, `bf16`, `f32`).
    pub fn name(self) -> &'static str {
        match self {
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
            DType::F32 => "f32",
        }
    }
}

impl core::fmt::Display for DType {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

impl core::str::FromStr for DType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "f16" => Ok(DType::F16),
            "bf16" => Ok(DType::Bf16),
            "f32" => Ok(DType::F32),
            _ => Err(format!("unknown dtype {s:?} (expected f16, bf16 or f32)")),
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
    impl Sealed for f32 {}
}

/// An element of a matrix the library reads or writes. Sealed: f16, bf16 and f32.
pub trait Element:
    sealed::Sealed
    + Copy
    + Send
    + Sync
    + PartialEq
    + core::fmt::Debug
    + bytemuck::Pod
    + cudarc::driver::DeviceRepr
    + cudarc::driver::ValidAsZeroBits
    + 'static
{
    /// The type's tag.
    const DTYPE: DType;
    /// The value, exactly, as f64.
    fn to_f64(self) -> f64;
    /// Round to nearest.
    fn from_f64(x: f64) -> Self;
    /// Zero.
    fn zero() -> Self {
        Self::from_f64(0.0)
    }
    /// A NaN of this type, used to poison outputs in tests.
    fn nan() -> Self {
        Self::from_f64(f64::NAN)
    }
}

/// An element type of A and B (tensor-core inputs): f16 or bf16.
pub trait InputElement: Element {}

impl Element for f16 {
    const DTYPE: DType = DType::F16;
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    fn from_f64(x: f64) -> Self {
        f16::from_f64(x)
    }
}
impl Element for bf16 {
    const DTYPE: DType = DType::Bf16;
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    fn from_f64(x: f64) -> Self {
        bf16::from_f64(x)
    }
}
impl Element for f32 {
    const DTYPE: DType = DType::F32;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(x: f64) -> Self {
        x as f32
    }
}
impl InputElement for f16 {}
impl InputElement for bf16 {}
