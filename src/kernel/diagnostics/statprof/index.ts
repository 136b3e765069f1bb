// The statistical profiler (Dask's distributed profiler, as a local callback) and its figure.
export { StatisticalProfiler, type StatisticalProfilerOptions, type ProfileSelection } from "./profiler";
export { ProfileFigure, type ProfileFigureOptions, profilePage } from "./figure";
