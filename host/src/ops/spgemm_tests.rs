//! Tests of the SpGEMM planner (host only).
use super::*;
